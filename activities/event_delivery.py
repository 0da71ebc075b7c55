"""The activities that call a client's webhook (SEP-3415): the handshake and one event.

Rules implemented:
- Both POST through activities/callback_http.py (address checks at delivery time, no
  redirects, https), signed as operators' webhooks are (mcp_tasks/webhooks/signature.py,
  Standard Webhooks) with the subscription's `whsec_` secret(s), and carry
  `X-MCP-Subscription-Id`.
- The handshake POSTs `{"type": "verification", "challenge": <nonce>}` (`webhook-id`
  `msg_verification_<random>`) and succeeds only on a 2xx whose JSON body echoes the challenge
  (compared in constant time). It returns "" on success, else the lastError category:
  `challenge_failed`, `http_4xx`, `http_5xx`, or how the connection failed. At most
  `DESTINATION_BURST` handshakes, then `DESTINATION_PER_MINUTE`, go to one resolved address
  and port from this worker, whoever asks: beyond, `HANDSHAKE_LIMITED` and nothing is sent.
- An event: first the subscriptions workflow is asked whether the subscription still lives
  (and for its URL and secrets, the new and the previous one during a rotation); if not, or
  past its expiry by this clock, the delivery ends (`EventSubscriptionEnded`) and nothing is
  sent. The body is an `EventOccurrence`: {eventId, name, timestamp, data (the task, with its
  `sequence`), cursor: null}; `webhook-id` is the eventId.
- 2xx: delivered. `410 Gone`: this delivery stops, the subscription stays. `413` and the other
  4xx but 408 and 429: refused, not retried. 5xx, 408, 429, 3xx, no connection, a time-out:
  retried (a `Retry-After` of seconds on 429/503 sets the next delay, at most 5 min).
- Each attempt counts in `mcp_tasks_event_deliveries_total{outcome}` (delivered, failed,
  rejected, gone, ended) on the worker's metrics. A failed attempt is one warning line (the
  subscription, the attempt, the category; never the URL, never a traceback): the error goes
  back to Temporal as a benign one, which the SDK logs only at debug level.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from temporalio import activity
from temporalio.client import WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory
from temporalio.service import RPCError, RPCStatusCode

from activities.callback_http import (
    CallbackAnswer,
    CallbackError,
    CallbackPolicy,
    post,
    resolved_address,
)
from mcp_tasks import __version__
from mcp_tasks.contracts.events import (
    DELIVER_ACTIVITY,
    ENDED_ERROR,
    HANDSHAKE_LIMITED,
    SUBSCRIPTION_QUERY,
    VERIFY_ACTIVITY,
    EventDelivery,
    Liveness,
    VerifyInput,
)
from mcp_tasks.contracts.webhooks import GONE_ERROR, REJECTED_ERROR
from mcp_tasks.token_buckets import TokenBucket, TokenBuckets
from mcp_tasks.webhooks.signature import signed_headers, whsec_key

SUBSCRIPTION_HEADER = "X-MCP-Subscription-Id"
DELIVERIES_METRIC = "mcp_tasks_event_deliveries_total"
TIMEOUT_S = 10.0
MAX_BODY_BYTES = 256 * 1024
MAX_RETRY_AFTER_S = 300
# Handshakes to one resolved address and port, from every principal, per worker.
DESTINATION_BURST = 10
DESTINATION_PER_MINUTE = 10
_RETRIED_4XX = {408, 429}


def _headers(
    subscription_id: str, message_id: str, whsecs: list[str], body: bytes
) -> dict[str, str]:
    keys = [whsec_key(secret) for secret in whsecs]
    return {
        "Content-Type": "application/json",
        "User-Agent": f"mcp-tasks-temporal/{__version__}",
        SUBSCRIPTION_HEADER: subscription_id,
        **signed_headers(keys, message_id, int(time.time()), body),
    }


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def category_of(status: int) -> str:
    return "http_5xx" if status >= 500 else "http_4xx"


class EventSender:
    """The two activities, bound to the operator's callback policy."""

    def __init__(self, policy: CallbackPolicy) -> None:
        self._policy = policy
        # Handshakes of every principal to one resolved destination, in this worker: a small
        # bucket, so many principals cannot together turn the worker into a port prober.
        self._destinations: TokenBuckets[tuple[str, int], TokenBucket] = TokenBuckets(
            lambda now: TokenBucket(DESTINATION_BURST, now)
        )

    async def _destination_allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        try:
            address = await resolved_address(
                parts.hostname or "", parts.port or 443, self._policy.allow_private
            )
        except CallbackError:
            return True  # post() refuses it in turn, with its category, and sends nothing
        bucket = self._destinations.refilled(
            (address, parts.port or 443), lambda _: DESTINATION_PER_MINUTE / 60
        )
        return bucket.take()

    @activity.defn(name=VERIFY_ACTIVITY)
    async def verify_endpoint(self, request: VerifyInput) -> str:
        if not await self._destination_allowed(request.url):
            activity.logger.info("event endpoint handshake refused: its destination is busy")
            return HANDSHAKE_LIMITED
        body = _json({"type": "verification", "challenge": request.challenge})
        message_id = f"msg_verification_{secrets.token_hex(12)}"
        headers = _headers(request.subscription_id, message_id, [request.secret], body)
        try:
            answer = await post(request.url, body, headers, self._policy, TIMEOUT_S)
        except CallbackError as err:
            activity.logger.info("event endpoint handshake failed: %s", err)
            return err.category
        if not 200 <= answer.status < 300:
            return category_of(answer.status)
        try:
            echoed = json.loads(answer.body).get("challenge")
        except (ValueError, AttributeError):
            return "challenge_failed"
        if not isinstance(echoed, str):
            return "challenge_failed"
        matches = hmac.compare_digest(echoed.encode(), request.challenge.encode())
        return "" if matches else "challenge_failed"

    @activity.defn(name=DELIVER_ACTIVITY)
    async def deliver(self, delivery: EventDelivery) -> dict[str, Any]:
        try:
            liveness = await _liveness(delivery)
            if not liveness.live or _past(liveness.expires_at):
                raise ApplicationError(
                    f"subscription {delivery.subscription_id} has ended: nothing is sent",
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
            body = _json(occurrence)
            if len(body) > MAX_BODY_BYTES:
                raise ApplicationError(
                    f"the event body is {len(body)} bytes, more than {MAX_BODY_BYTES}",
                    "http_4xx",
                    type=REJECTED_ERROR,
                    non_retryable=True,
                )
            headers = _headers(delivery.subscription_id, delivery.event_id, liveness.secrets, body)
            try:
                answer = await post(liveness.url, body, headers, self._policy, TIMEOUT_S)
            except CallbackError as err:
                raise ApplicationError(str(err), err.category) from None
            outcome = _judged(delivery.subscription_id, answer)
        except ApplicationError as err:
            ended = _outcome(err)
            _count(ended)
            if ended in ("failed", "rejected"):
                activity.logger.warning(
                    "event delivery attempt %d for subscription %s failed: %s",
                    activity.info().attempt,
                    delivery.subscription_id,
                    err.details[0] if err.details else ended,
                )
            raise _benign(err) from None
        _count("delivered")
        return outcome


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


def _judged(subscription_id: str, answer: CallbackAnswer) -> dict[str, Any]:
    status = answer.status
    where = f"the webhook of subscription {subscription_id}"
    if 200 <= status < 300:
        return {"outcome": "delivered", "status": status}
    if status == 410:
        raise ApplicationError(f"{where} answered 410 Gone", type=GONE_ERROR, non_retryable=True)
    if 400 <= status < 500 and status not in _RETRIED_4XX:
        raise ApplicationError(
            f"{where} refused the event: HTTP {status}",
            "http_4xx",
            type=REJECTED_ERROR,
            non_retryable=True,
        )
    delay = None
    if status in (429, 503) and answer.retry_after.strip().isdigit():
        delay = timedelta(seconds=min(int(answer.retry_after), MAX_RETRY_AFTER_S))
    raise ApplicationError(
        f"{where} answered HTTP {status}", category_of(status), next_retry_delay=delay
    )


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


def _outcome(err: ApplicationError) -> str:
    if err.type == ENDED_ERROR:
        return "ended"
    if err.type == GONE_ERROR:
        return "gone"
    return "rejected" if err.non_retryable else "failed"


def _count(outcome: str) -> None:
    activity.metric_meter().create_counter(
        DELIVERIES_METRIC, "Client-subscribed event delivery attempts by outcome"
    ).add(1, {"outcome": outcome})
