"""One delivery engine, durable: a child workflow per delivery, whose one activity
(activities/delivery.py) POSTs it, retried by Temporal until it is delivered, refused or out
of time. Two kinds of delivery run on it, each under its own workflow type (runs in flight
keep theirs); they differ only in the activity, the retry budget and what a run that could
not deliver ends with.

Rules implemented:
- Every attempt takes at most `ATTEMPT_TIMEOUT` (the activity's own 10 s limit on the POST,
  and some room); a refusal (4xx but 408 and 429), `410 Gone`, or a receiver that no longer
  exists is not retried.
- `McpWebhookDelivery`: a task's notification to an operator's endpoint (workflows/webhooks.py
  starts it). Retried from 1 s, doubling, up to every 5 min, for a day (`WEBHOOK_BUDGET`):
  an approval can wait for days, and a receiver down for a night must still hear of it. A run
  that could not deliver fails with its activity's failure; one whose day went by is counted
  `gave_up`.
- `McpEventDelivery`: one event for one client's subscription (SEP-3415), the child
  `<subscription id>.<event id>` of the principal's subscriptions workflow. At most
  `MAX_ATTEMPTS` over at most `EVENT_GIVE_UP_AFTER` (the draft suggests 3 to 5 attempts over
  10 to 15 minutes): a client's receiver never keeps the worker busy for a day. Runs started
  before that rule keep the day-long retry (`BOUNDED_PATCH`). It never fails: it returns its
  outcome (`delivered`, `ended`, `gone`, or `failed` with a SEP-3415 lastError category) for
  the subscription's delivery status.

Delivery workflows carry no task memo and no `Mcp*` search attribute: tasks/list, the expiry
sweep, the quotas and the open-task gauges never count them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import NoReturn, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from mcp_tasks.contracts import events, webhooks
from mcp_tasks.contracts.events import ENDED_ERROR, EventDelivery, EventOutcome
from mcp_tasks.contracts.webhooks import (
    DELIVERIES_HELP,
    DELIVERIES_METRIC,
    GONE_ERROR,
    REJECTED_ERROR,
    UNKNOWN_ENDPOINT_ERROR,
    WebhookDelivery,
    WebhookOutcome,
)

ATTEMPT_TIMEOUT = timedelta(seconds=30)
DAY_LONG = timedelta(days=1)
# What a delivery ends with: its activity's result, or what its workflow makes of the failure.
Outcome = TypeVar("Outcome", WebhookOutcome, EventOutcome)


@dataclass(frozen=True)
class Budget:
    """How long, and how often, a delivery is tried."""

    retry_policy: RetryPolicy
    give_up_after: timedelta


def _day_long(final: list[str]) -> Budget:
    backoff = RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(minutes=5),
        non_retryable_error_types=final,
    )
    return Budget(backoff, DAY_LONG)


WEBHOOK_BUDGET = _day_long([REJECTED_ERROR, GONE_ERROR, UNKNOWN_ENDPOINT_ERROR])

_EVENT_FINAL = [REJECTED_ERROR, GONE_ERROR, ENDED_ERROR]
BOUNDED_PATCH = "event-delivery-bounded"
MAX_ATTEMPTS = 5
EVENT_GIVE_UP_AFTER = timedelta(minutes=15)
# 5 attempts 15 s, 45 s, 2 min 15 s and 6 min 45 s apart: 10 minutes, plus the attempts' own.
EVENT_BUDGET = Budget(
    RetryPolicy(
        initial_interval=timedelta(seconds=15),
        backoff_coefficient=3.0,
        maximum_interval=timedelta(minutes=7),
        maximum_attempts=MAX_ATTEMPTS,
        non_retryable_error_types=_EVENT_FINAL,
    ),
    EVENT_GIVE_UP_AFTER,
)
# The retry of event deliveries started before the bound.
EVENT_DAY_LONG_BUDGET = _day_long(_EVENT_FINAL)


async def deliver(
    activity: str,
    delivery: WebhookDelivery | EventDelivery,
    budget: Budget,
    undelivered: Callable[[ActivityError], Outcome],
) -> Outcome:
    """Run the delivery's activity within `budget`: its result, or what `undelivered` makes
    of the failure once no attempt is left (it may raise it)."""
    try:
        # Decoded as the plain JSON object it is: an outcome is a TypedDict, a dict at runtime.
        result: Outcome = await workflow.execute_activity(
            activity,
            delivery,
            result_type=dict,
            start_to_close_timeout=ATTEMPT_TIMEOUT,
            schedule_to_close_timeout=budget.give_up_after,
            retry_policy=budget.retry_policy,
        )
    except ActivityError as err:
        return undelivered(err)
    return result


@workflow.defn(name=webhooks.DELIVERY_WORKFLOW)
class WebhookDeliveryWorkflow:
    @workflow.run
    async def run(self, delivery: WebhookDelivery) -> WebhookOutcome:
        return await deliver(webhooks.DELIVER_ACTIVITY, delivery, WEBHOOK_BUDGET, _failed)


def _failed(err: ActivityError) -> NoReturn:
    """An operator's delivery fails with its activity; a day of retries gone by is lost."""
    if isinstance(err.cause, TemporalTimeoutError):
        workflow.metric_meter().create_counter(DELIVERIES_METRIC, DELIVERIES_HELP).add(
            1, {"outcome": "gave_up"}
        )
    raise err


@workflow.defn(name=events.DELIVERY_WORKFLOW)
class EventDeliveryWorkflow:
    @workflow.run
    async def run(self, delivery: EventDelivery) -> EventOutcome:
        budget = EVENT_BUDGET if workflow.patched(BOUNDED_PATCH) else EVENT_DAY_LONG_BUDGET
        return await deliver(events.DELIVER_ACTIVITY, delivery, budget, outcome_of)


def outcome_of(err: ActivityError) -> EventOutcome:
    """An event delivery's outcome, for the subscription's delivery status."""
    cause = err.cause
    if isinstance(cause, ApplicationError):
        if cause.type == ENDED_ERROR:
            return {"outcome": "ended"}
        if cause.type == GONE_ERROR:
            return {"outcome": "gone"}
        reason = cause.details[0] if cause.details else "http_4xx"
        return {"outcome": "failed", "reason": str(reason)}
    return {"outcome": "failed", "reason": "timeout"}  # every attempt's time went by
