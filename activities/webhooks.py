"""The one activity that POSTs a webhook delivery (workflows/webhooks.py starts it).

Rules implemented:
- Only the worker's configured endpoints are called: the delivery names an endpoint id, and
  its URL and secret come from this worker's file (mcp_tasks/webhooks/endpoints.py). An id
  the worker does not know is a non-retryable failure (the endpoint was removed).
- The body is JSON: {"id": delivery id, "event", "occurredAt", "sequence" (a number per task
  that only grows: a receiver drops an event older than one it has), "task": {taskId, tool, status,
  statusMessage, createdAt, lastUpdatedAt, inputRequests: [{key, message}], progress?:
  {progress, total?}}, "inboxUrl":
  <public URL>/inbox/tasks/<taskId> when MCP_TASKS_PUBLIC_URL is set}; for a `slack` endpoint
  {"text": ...}. At most `MAX_BODY_BYTES`.
- Signed per attempt on the Standard Webhooks profile (mcp_tasks/webhooks/signature.py):
  `webhook-id` (the delivery id), `webhook-timestamp`, `webhook-signature` (one `v1,` per secret
  of the endpoint). A `slack` endpoint is not signed, and gets `webhook-id` all the same.
- One attempt takes at most `TIMEOUT_S`; redirects are not followed (a 3xx is a failure, so
  a delivery never reaches another host); at most `MAX_RESPONSE_BYTES` of the answer are read.
- 2xx: delivered. `410 Gone`: the receiver wants no more of it, not retried. Other 4xx but 408
  and 429: refused, not retried. Anything else (5xx, 408, 429, 3xx, no connection, time-out):
  retried by the workflow's policy; a `Retry-After` of seconds on 429/503 sets the next delay
  (at most 5 min).
- An endpoint suspended after sustained failure (activities/webhook_health.py) is not called:
  the attempt fails at once, retried after the suspension's wait.
- Errors name the endpoint id and never its URL (Slack's URL is its secret) or the secret;
  they are recorded in the child's history.
- Each attempt counts in `mcp_tasks_webhook_deliveries` by outcome (delivered, failed,
  rejected, gone, suspended) on the worker's SDK metrics (MCP_TASKS_WORKER_METRICS_PORT).
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from typing import Any

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.webhook_health import EndpointHealth, SuspensionPolicy
from mcp_tasks import __version__
from mcp_tasks.contracts.webhooks import (
    DELIVER_ACTIVITY,
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
from mcp_tasks.webhooks.endpoints import WebhookEndpoint, WebhookEndpoints
from mcp_tasks.webhooks.signature import EVENT_HEADER, ID_HEADER, signed_headers

TIMEOUT_S = 10.0
MAX_BODY_BYTES = 64 * 1024
MAX_RESPONSE_BYTES = 64 * 1024
MAX_RETRY_AFTER_S = 300
_RETRIED_4XX = {408, 429}


def delivery_body(delivery: WebhookDelivery, public_url: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": delivery.delivery_id,
        "event": delivery.event,
        "occurredAt": delivery.occurred_at,
        **({"sequence": delivery.sequence} if delivery.sequence is not None else {}),
        "task": delivery.task,
    }
    if public_url:
        body["inboxUrl"] = f"{public_url.rstrip('/')}/inbox/tasks/{delivery.task.get('taskId')}"
    return body


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(delivery: WebhookDelivery, public_url: str | None) -> dict[str, Any]:
    """A Slack incoming-webhook message: one line of what happened, the questions, a link."""
    task = delivery.task
    headline = {
        "input_required": "waits for input",
        "completed": "completed",
        "failed": "failed",
        "cancelled": "was cancelled",
    }.get(delivery.event, delivery.event)
    lines = [f"Task {task.get('taskId')} ({task.get('tool')}) {headline}"]
    if task.get("statusMessage"):
        lines[0] += f": {task['statusMessage']}"
    lines += [f"• {request['message']}" for request in task.get("inputRequests") or []]
    text = "\n".join(_slack_escape(line) for line in lines)
    inbox = delivery_body(delivery, public_url).get("inboxUrl")
    if inbox:
        text += f"\n<{inbox}|Open in the inbox>"
    return {"text": text}


def encoded(body: dict[str, Any]) -> bytes:
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_BODY_BYTES:
        raise ApplicationError(
            f"the webhook body is {len(data)} bytes, more than {MAX_BODY_BYTES}",
            type=REJECTED_ERROR,
            non_retryable=True,
        )
    return data


# httpx logs every request's URL at INFO; a webhook's URL is its secret. Here as well as in
# the process's log setup, so a worker embedded in another program is covered too.
quiet_http_clients()


class WebhookSender:
    """The deliver activity, bound to this worker's endpoints and public URL."""

    def __init__(
        self,
        endpoints: WebhookEndpoints,
        public_url: str | None,
        health: EndpointHealth | None = None,
    ) -> None:
        self._endpoints = endpoints
        self._public_url = public_url
        self._health = health or EndpointHealth(SuspensionPolicy())

    @activity.defn(name=DELIVER_ACTIVITY)
    async def deliver(self, delivery: WebhookDelivery) -> dict[str, Any]:
        started = time.monotonic()
        try:
            endpoint = self._endpoints.get(delivery.endpoint)
            if endpoint is None:
                raise ApplicationError(
                    f"webhook endpoint {delivery.endpoint!r} is not in this worker's "
                    "MCP_TASKS_WEBHOOKS_FILE (removed?): the delivery is dropped",
                    type=UNKNOWN_ENDPOINT_ERROR,
                    non_retryable=True,
                )
            build = slack_body if endpoint.format == "slack" else delivery_body
            body = encoded(build(delivery, self._public_url))
            self._refuse_if_suspended(endpoint.id)
            try:
                status = await self._post(endpoint, delivery, body)
            except ApplicationError as err:
                self._record(endpoint.id, succeeded=err.type == GONE_ERROR)
                raise
            self._record(endpoint.id, succeeded=True)
        except ApplicationError as err:
            _count(_outcome(err), time.monotonic() - started)
            raise
        _count("delivered", time.monotonic() - started)
        return {"status": status, "attempt": activity.info().attempt}

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

    async def _post(self, endpoint: WebhookEndpoint, delivery: WebhookDelivery, body: bytes) -> int:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"mcp-tasks-temporal/{__version__}",
            EVENT_HEADER: delivery.event,
            ID_HEADER: delivery.delivery_id,
        }
        if endpoint.keys:
            timestamp = int(time.time())
            headers |= signed_headers(endpoint.keys, delivery.delivery_id, timestamp, body)
        where = f"webhook endpoint {endpoint.id!r}"
        try:
            # No proxies or .netrc from the environment, no redirects: only the configured URL.
            async with (
                asyncio.timeout(TIMEOUT_S),
                httpx.AsyncClient(
                    timeout=TIMEOUT_S, follow_redirects=False, trust_env=False
                ) as client,
                client.stream("POST", endpoint.url, content=body, headers=headers) as response,
            ):
                read = 0
                async for chunk in response.aiter_raw():
                    read += len(chunk)
                    if read >= MAX_RESPONSE_BYTES:
                        break  # the rest of an answer is nobody's business
                status = response.status_code
                retry_after = response.headers.get("retry-after", "")
        except TimeoutError:
            raise ApplicationError(f"{where}: no answer within {TIMEOUT_S:g} s") from None
        except httpx.HTTPError as err:  # its message may show the URL: only its kind
            raise ApplicationError(f"{where}: {type(err).__name__}") from None
        if 200 <= status < 300:
            return status
        if status == 410:
            raise ApplicationError(
                f"{where} answered 410 Gone: the delivery is dropped",
                type=GONE_ERROR,
                non_retryable=True,
            )
        if 400 <= status < 500 and status not in _RETRIED_4XX:
            raise ApplicationError(
                f"{where} refused the delivery: HTTP {status}",
                type=REJECTED_ERROR,
                non_retryable=True,
            )
        delay = None
        if status in (429, 503) and retry_after.strip().isdigit():
            delay = timedelta(seconds=min(int(retry_after), MAX_RETRY_AFTER_S))
        kind = "a redirect (not followed)" if 300 <= status < 400 else "an error"
        raise ApplicationError(f"{where} answered HTTP {status}, {kind}", next_retry_delay=delay)


def _outcome(err: ApplicationError) -> str:
    if err.type == GONE_ERROR:
        return "gone"
    if err.type == SUSPENDED_ERROR:
        return "suspended"
    return "rejected" if err.non_retryable else "failed"


def _gauge(endpoint: str, suspended: bool) -> None:
    activity.metric_meter().create_gauge(
        SUSPENDED_METRIC, "1 while the worker suspends a webhook endpoint after sustained failure"
    ).set(int(suspended), {"endpoint": endpoint})


def _count(outcome: str, seconds: float) -> None:
    meter = activity.metric_meter()
    meter.create_counter(DELIVERIES_METRIC, DELIVERIES_HELP).add(1, {"outcome": outcome})
    meter.create_histogram_float(
        # no unit: the exporter would append it to a name that already says seconds
        DELIVERY_SECONDS_METRIC,
        "Time of one webhook delivery attempt (seconds)",
    ).record(seconds, {"outcome": outcome})
