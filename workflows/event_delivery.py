"""One event for one subscription (SEP-3415 webhook delivery), durable: the child workflow
`<subscription id>.<event id>` of the principal's subscriptions workflow.

Rules implemented:
- It runs one activity (activities/event_delivery.py), retried as operators' webhooks are
  (workflows/webhooks.py: from 1 s, doubling, up to every 5 min, for at most a day) for as long
  as the subscription lives: before each attempt the activity asks whether it still does, and
  an ended subscription ends the delivery (`ended`), as does `410 Gone` (`gone`) or a refusal.
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
from workflows.webhooks import ATTEMPT_TIMEOUT, GIVE_UP_AFTER

RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=5),
    non_retryable_error_types=[REJECTED_ERROR, GONE_ERROR, ENDED_ERROR],
)


@workflow.defn(name=DELIVERY_WORKFLOW)
class EventDeliveryWorkflow:
    @workflow.run
    async def run(self, delivery: EventDelivery) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await workflow.execute_activity(
                DELIVER_ACTIVITY,
                delivery,
                result_type=dict,
                start_to_close_timeout=ATTEMPT_TIMEOUT,
                schedule_to_close_timeout=GIVE_UP_AFTER,
                retry_policy=RETRY_POLICY,
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
    return {"outcome": "failed", "reason": "timeout"}  # a day of retries went by
