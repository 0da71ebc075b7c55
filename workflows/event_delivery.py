"""One event for one subscription (SEP-3415 webhook delivery), durable: the child workflow
`<subscription id>.<event id>` of the principal's subscriptions workflow.

Rules implemented:
- It runs one activity (activities/event_delivery.py), at most `MAX_ATTEMPTS` times over at
  most `GIVE_UP_AFTER` (the draft suggests 3 to 5 attempts over 10 to 15 minutes): a client's
  receiver never keeps the worker busy for a day, as operators' webhooks may
  (workflows/webhooks.py). Runs started before that rule keep the day-long retry
  (`BOUNDED_PATCH`). Before each attempt the activity asks whether the subscription still
  lives; an ended subscription ends the delivery (`ended`), as does `410 Gone` (`gone`) or a
  refusal.
- It never fails: it returns its outcome (`delivered`, `ended`, `gone`, or `failed` with a
  SEP-3415 lastError category) for the subscription's delivery status.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from mcp_tasks.contracts.events import (
    DELIVER_ACTIVITY,
    DELIVERY_WORKFLOW,
    ENDED_ERROR,
    EventDelivery,
)
from mcp_tasks.contracts.webhooks import GONE_ERROR, REJECTED_ERROR
from workflows.webhooks import ATTEMPT_TIMEOUT
from workflows.webhooks import GIVE_UP_AFTER as DAY_LONG

_FINAL = [REJECTED_ERROR, GONE_ERROR, ENDED_ERROR]
# The retry of runs started before the bound (operators' webhooks keep it).
RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=5),
    non_retryable_error_types=_FINAL,
)
BOUNDED_PATCH = "event-delivery-bounded"
MAX_ATTEMPTS = 5
# 5 attempts 15 s, 45 s, 2 min 15 s and 6 min 45 s apart: 10 minutes, plus the attempts' own.
BOUNDED_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=15),
    backoff_coefficient=3.0,
    maximum_interval=timedelta(minutes=7),
    maximum_attempts=MAX_ATTEMPTS,
    non_retryable_error_types=_FINAL,
)
GIVE_UP_AFTER = timedelta(minutes=15)


@workflow.defn(name=DELIVERY_WORKFLOW)
class EventDeliveryWorkflow:
    @workflow.run
    async def run(self, delivery: EventDelivery) -> dict[str, Any]:
        bounded = workflow.patched(BOUNDED_PATCH)
        try:
            result: dict[str, Any] = await workflow.execute_activity(
                DELIVER_ACTIVITY,
                delivery,
                result_type=dict,
                start_to_close_timeout=ATTEMPT_TIMEOUT,
                schedule_to_close_timeout=GIVE_UP_AFTER if bounded else DAY_LONG,
                retry_policy=BOUNDED_RETRY_POLICY if bounded else RETRY_POLICY,
            )
        except ActivityError as err:
            return outcome_of(err)
        return result


def outcome_of(err: ActivityError) -> dict[str, Any]:
    cause = err.cause
    if isinstance(cause, ApplicationError):
        if cause.type == ENDED_ERROR:
            return {"outcome": "ended"}
        if cause.type == GONE_ERROR:
            return {"outcome": "gone"}
        reason = cause.details[0] if cause.details else "http_4xx"
        return {"outcome": "failed", "reason": str(reason)}
    return {"outcome": "failed", "reason": "timeout"}  # every attempt's time went by
