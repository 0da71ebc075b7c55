"""The sender of the delivery engine (workflows/delivery.py): one activity that POSTs a
delivery, registered under each kind's name. (A client endpoint's handshake signs and POSTs
the same way: activities/event_handshake.py.)

Rules implemented:
- A delivery is first resolved into one `Post`: whom it names, where it goes, its body, its
  `webhook-id` and the keys that sign it.
  - An operator's webhook (`mcp_tasks.deliver_webhook`): the endpoint of this worker's file
    (mcp_tasks/webhooks/endpoints.py), never a URL from the task; an id the worker does not
    know is refused for good (the endpoint was removed). The body is the endpoint's format
    (activities/webhooks.py), at most `WEBHOOK_MAX_BYTES`; `Mcp-Tasks-Event` names the event; a
    `slack` endpoint is not signed. An endpoint suspended after sustained failure
    (activities/webhook_health.py) is not called: the attempt fails at once, and is retried
    after the suspension's wait. The URL is called as configured.
  - An event for a client's subscription (`mcp_tasks.deliver_event`, SEP-3415): first the
    subscriptions workflow is asked whether the subscription still lives (and for its URL and
    secrets, the new and the previous one during a rotation); if not, or past its expiry by
    this clock, the delivery ends (`EventSubscriptionEnded`) and nothing is sent. The body is
    an `EventOccurrence`: {eventId, name, timestamp, data (the task, with its `sequence`),
    cursor: null}, at most `EVENT_MAX_BYTES`; `webhook-id` is the eventId;
    `X-MCP-Subscription-Id` names the subscription. The URL is called through the address
    checks of a client's URL (activities/callback_http.py).
- Then one rule for both. A body over its bound is refused for good. Each attempt is signed
  on the Standard Webhooks profile (mcp_tasks/webhooks/signature.py): `webhook-id`,
  `webhook-timestamp`, `webhook-signature` (one `v1,` per key); an unsigned one still has its
  `webhook-id`. One attempt takes at most `TIMEOUT_S`.
- 2xx: delivered. `410 Gone`: this delivery stops. Other 4xx but 408 and 429: refused, not
  retried. 5xx, 408, 429, 3xx (a redirect is never followed), no connection, a time-out:
  retried by the workflow's budget; a `Retry-After` of seconds on 429/503 sets the next delay
  (at most 5 min). An error carries its SEP-3415 lastError category (`http_4xx`, `timeout`…)
  and names the endpoint id or the subscription, never a URL (a Slack URL is its secret) nor
  a secret.
- Each attempt counts by outcome (delivered, failed, rejected, gone; suspended for a webhook,
  ended for an event) in its kind's counter on the worker's SDK metrics
  (MCP_TASKS_WORKER_METRICS_PORT): `mcp_tasks_webhook_deliveries` (and the attempt's time in
  `mcp_tasks_webhook_delivery_duration_seconds`) or `mcp_tasks_event_deliveries_total`. A
  failed or refused attempt is one warning line (the receiver, the attempt, the category;
  never a URL, never a traceback): the error goes back to Temporal as a benign one, which the
  SDK logs only at debug level.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory
from temporalio.service import RPCError, RPCStatusCode

from activities.callback_http import (
    CallbackAnswer,
    CallbackError,
    CallbackPolicy,
    post,
    post_configured,
)
from activities.webhook_health import EndpointHealth, SuspensionPolicy
from activities.webhooks import webhook_body
from mcp_tasks import __version__
from mcp_tasks.contracts import events, webhooks
from mcp_tasks.contracts.events import (
    ENDED_ERROR,
    SUBSCRIPTION_QUERY,
    EventDelivery,
    Liveness,
)
from mcp_tasks.contracts.webhooks import (
    DELIVERIES_HELP,
    DELIVERIES_METRIC,
    DELIVERY_SECONDS_METRIC,
    GONE_ERROR,
    REJECTED_ERROR,
    SUSPENDED_ERROR,
    SUSPENDED_METRIC,
    UNKNOWN_ENDPOINT_ERROR,
    WebhookDelivery,
)
from mcp_tasks.logging import quiet_http_clients
from mcp_tasks.webhooks.endpoints import WebhookEndpoints
from mcp_tasks.webhooks.signature import EVENT_HEADER, ID_HEADER, signed_headers, whsec_key

SUBSCRIPTION_HEADER = "X-MCP-Subscription-Id"
TIMEOUT_S = 10.0
WEBHOOK_MAX_BYTES = 64 * 1024
EVENT_MAX_BYTES = 256 * 1024
MAX_RETRY_AFTER_S = 300
_RETRIED_4XX = {408, 429}

# httpx logs every request's URL at INFO; a webhook's URL is its secret. Here as well as in
# the process's log setup, so a worker embedded in another program is covered too.
quiet_http_clients()

Transport = Callable[[str, bytes, dict[str, str], float], Awaitable[CallbackAnswer]]


@dataclass(frozen=True)
class Tally:
    """Where a kind's attempts are counted."""

    counter: str
    help: str
    seconds: str | None = None  # a histogram of each attempt's time

    def count(self, outcome: str, seconds: float) -> None:
        meter = activity.metric_meter()
        meter.create_counter(self.counter, self.help).add(1, {"outcome": outcome})
        if self.seconds is not None:
            # no unit: the exporter would append it to a name that already says seconds
            meter.create_histogram_float(
                self.seconds, "Time of one webhook delivery attempt (seconds)"
            ).record(seconds, {"outcome": outcome})


WEBHOOK_TALLY = Tally(DELIVERIES_METRIC, DELIVERIES_HELP, DELIVERY_SECONDS_METRIC)
EVENT_TALLY = Tally(
    "mcp_tasks_event_deliveries_total", "Client-subscribed event delivery attempts by outcome"
)


@dataclass(frozen=True)
class Post:
    """One attempt, resolved."""

    who: str  # the receiver, as errors and log lines name it: never its URL
    url: str
    body: bytes
    message_id: str  # `webhook-id`
    keys: Sequence[bytes]  # none: unsigned
    headers: Mapping[str, str] = field(default_factory=dict)  # the kind's own


class DeliverySender:
    """The activity, bound to this worker's endpoints, public URL and callback policy."""

    def __init__(
        self,
        endpoints: WebhookEndpoints | None = None,
        public_url: str | None = None,
        health: EndpointHealth | None = None,
        policy: CallbackPolicy | None = None,
    ) -> None:
        self._endpoints = endpoints or WebhookEndpoints()
        self._public_url = public_url
        self._health = health or EndpointHealth(SuspensionPolicy())
        self._policy = policy or CallbackPolicy()

    @activity.defn(name=webhooks.DELIVER_ACTIVITY)
    async def deliver_webhook(self, delivery: WebhookDelivery) -> dict[str, Any]:
        who = f"webhook endpoint {delivery.endpoint!r}"
        with _attempt(WEBHOOK_TALLY, who):
            endpoint = self._endpoints.get(delivery.endpoint)
            if endpoint is None:
                raise ApplicationError(
                    f"{who} is not in this worker's MCP_TASKS_WEBHOOKS_FILE (removed?): the "
                    "delivery is dropped",
                    type=UNKNOWN_ENDPOINT_ERROR,
                    non_retryable=True,
                )
            body = webhook_body(endpoint, delivery, self._public_url)
            attempt = Post(
                who,
                endpoint.url,
                encoded(body, WEBHOOK_MAX_BYTES),
                delivery.delivery_id,
                endpoint.keys,
                {EVENT_HEADER: delivery.event},
            )
            self._refuse_if_suspended(endpoint.id)
            try:
                status = await sent(attempt, post_configured)
            except ApplicationError as err:
                self._record(endpoint.id, succeeded=err.type == GONE_ERROR)
                raise
            self._record(endpoint.id, succeeded=True)
        return {"status": status, "attempt": activity.info().attempt}

    @activity.defn(name=events.DELIVER_ACTIVITY)
    async def deliver_event(self, delivery: EventDelivery) -> dict[str, Any]:
        subscription = delivery.subscription_id
        who = f"the webhook of subscription {subscription}"
        with _attempt(EVENT_TALLY, who):
            liveness = await _liveness(delivery)
            if not liveness.live or _past(liveness.expires_at):
                raise ApplicationError(
                    f"subscription {subscription} has ended: nothing is sent",
                    type=ENDED_ERROR,
                    non_retryable=True,
                )
            occurrence = {
                "eventId": delivery.event_id,
                "name": delivery.name,
                "timestamp": delivery.timestamp,
                "data": delivery.data,
                "cursor": None,
            }
            attempt = Post(
                who,
                liveness.url,
                encoded(occurrence, EVENT_MAX_BYTES),
                delivery.event_id,
                [whsec_key(secret) for secret in liveness.secrets],
                {SUBSCRIPTION_HEADER: subscription},
            )
            status = await sent(attempt, self._post_checked)
        return {"outcome": "delivered", "status": status}

    async def _post_checked(
        self, url: str, body: bytes, sent_headers: dict[str, str], timeout_s: float
    ) -> CallbackAnswer:
        return await post(url, body, sent_headers, self._policy, timeout_s)

    def _refuse_if_suspended(self, endpoint: str) -> None:
        wait = self._health.wait_s(endpoint)
        _gauge(endpoint, wait is not None)
        if wait is not None:
            raise ApplicationError(
                f"webhook endpoint {endpoint!r} is suspended after sustained failure: "
                f"tried again in {wait:.0f} s",
                type=SUSPENDED_ERROR,
                next_retry_delay=timedelta(seconds=wait),
            )

    def _record(self, endpoint: str, *, succeeded: bool) -> None:
        self._health.record(endpoint, succeeded)
        _gauge(endpoint, self._health.is_suspended(endpoint))


def encoded(body: dict[str, Any], max_bytes: int) -> bytes:
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > max_bytes:
        raise ApplicationError(
            f"the body is {len(data)} bytes, more than {max_bytes}",
            "http_4xx",
            type=REJECTED_ERROR,
            non_retryable=True,
        )
    return data


def headers(attempt: Post) -> dict[str, str]:
    """The headers of one attempt, signed now when it has keys."""
    sent = {
        "Content-Type": "application/json",
        "User-Agent": f"mcp-tasks-temporal/{__version__}",
        **attempt.headers,
        ID_HEADER: attempt.message_id,
    }
    if attempt.keys:
        sent |= signed_headers(attempt.keys, attempt.message_id, int(time.time()), attempt.body)
    return sent


async def sent(attempt: Post, transport: Transport) -> int:
    """POST `attempt`: the status of a 2xx answer; an ApplicationError for any other."""
    try:
        answer = await transport(attempt.url, attempt.body, headers(attempt), TIMEOUT_S)
    except CallbackError as err:
        raise ApplicationError(f"{attempt.who}: {err}", err.category) from None
    status = answer.status
    if 200 <= status < 300:
        return status
    if status == 410:
        raise ApplicationError(
            f"{attempt.who} answered 410 Gone: the delivery is dropped",
            "http_4xx",
            type=GONE_ERROR,
            non_retryable=True,
        )
    if 400 <= status < 500 and status not in _RETRIED_4XX:
        raise ApplicationError(
            f"{attempt.who} refused the delivery: HTTP {status}",
            "http_4xx",
            type=REJECTED_ERROR,
            non_retryable=True,
        )
    delay = None
    if status in (429, 503) and answer.retry_after.strip().isdigit():
        delay = timedelta(seconds=min(int(answer.retry_after), MAX_RETRY_AFTER_S))
    kind = "a redirect (not followed)" if 300 <= status < 400 else "an error"
    raise ApplicationError(
        f"{attempt.who} answered HTTP {status}, {kind}",
        category_of(status),
        next_retry_delay=delay,
    )


def category_of(status: int) -> str:
    return "http_5xx" if status >= 500 else "http_4xx"


@contextlib.contextmanager
def _attempt(tally: Tally, who: str) -> Iterator[None]:
    """Count the attempt by its outcome; a failed one is one warning line and a benign error."""
    started = time.monotonic()
    try:
        yield
    except ApplicationError as err:
        outcome = _outcome(err)
        tally.count(outcome, time.monotonic() - started)
        if outcome in ("failed", "rejected"):
            activity.logger.warning(
                "delivery attempt %d to %s failed: %s",
                activity.info().attempt,
                who,
                err.details[0] if err.details else err.message,
            )
        raise _benign(err) from None
    tally.count("delivered", time.monotonic() - started)


def _outcome(err: ApplicationError) -> str:
    if err.type == ENDED_ERROR:
        return "ended"
    if err.type == GONE_ERROR:
        return "gone"
    if err.type == SUSPENDED_ERROR:
        return "suspended"
    return "rejected" if err.non_retryable else "failed"


def _benign(err: ApplicationError) -> ApplicationError:
    """`err`, as an outcome the workflow expects rather than a fault of the worker."""
    return ApplicationError(
        err.message,
        *err.details,
        type=err.type,
        non_retryable=err.non_retryable,
        next_retry_delay=err.next_retry_delay,
        category=ApplicationErrorCategory.BENIGN,
    )


async def _liveness(delivery: EventDelivery) -> Liveness:
    handle = activity.client().get_workflow_handle(delivery.subscriptions_workflow)
    try:
        liveness: Liveness = await handle.query(
            SUBSCRIPTION_QUERY, delivery.subscription_id, result_type=Liveness
        )
        return liveness
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:  # the workflow is gone: so is the subscription
            return Liveness(False)
        raise
    except WorkflowQueryFailedError:
        return Liveness(False)


def _past(expires_at: str) -> bool:
    if not expires_at:
        return True
    expiry = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    return expiry <= datetime.now(UTC)


def _gauge(endpoint: str, suspended: bool) -> None:
    activity.metric_meter().create_gauge(
        SUSPENDED_METRIC, "1 while the worker suspends a webhook endpoint after sustained failure"
    ).set(int(suspended), {"endpoint": endpoint})
