"""The one activity that POSTs a webhook delivery (workflows/webhooks.py starts it).

Rules implemented:
- Only the worker's configured endpoints are called: the delivery names an endpoint id, and
  its URL and secret come from this worker's file (mcp_server/webhooks/endpoints.py). An id
  the worker does not know is a non-retryable failure (the endpoint was removed).
- The body is JSON: {"id": delivery id, "event", "occurredAt", "task": {taskId, tool, status,
  statusMessage, createdAt, lastUpdatedAt, inputRequests: [{key, message}]}, "inboxUrl":
  <public URL>/inbox/tasks/<taskId> when MCP_TASKS_PUBLIC_URL is set}; for a `slack` endpoint
  {"text": ...}. At most `MAX_BODY_BYTES`.
- Signed per attempt (mcp_server/webhooks/signature.py): delivery id, timestamp, signature.
- One attempt takes at most `TIMEOUT_S`; redirects are not followed (a 3xx is a failure, so
  a delivery never reaches another host); at most `MAX_RESPONSE_BYTES` of the answer are read.
- 2xx: delivered. 4xx but 408 and 429: refused, not retried. Anything else (5xx, 408, 429, 3xx,
  no connection, time-out): retried by the workflow's policy; a `Retry-After` of seconds on
  429/503 sets the next delay (at most 5 min).
- Errors name the endpoint id and never its URL (Slack's URL is its secret) or the secret;
  they are recorded in the child's history.
- Each attempt counts in `mcp_tasks_webhook_deliveries` by outcome (delivered, failed,
  rejected) on the worker's SDK metrics (MCP_TASKS_WORKER_METRICS_PORT).
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

from mcp_server import __version__
from mcp_server.observability.logging import quiet_http_clients
from mcp_server.observability.metrics import WEBHOOK_DELIVERIES, WEBHOOK_DELIVERY_SECONDS
from mcp_server.webhooks.endpoints import WebhookEndpoint, WebhookEndpoints
from mcp_server.webhooks.signature import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    signature,
)
from workflows.webhooks import (
    DELIVER_ACTIVITY,
    REJECTED_ERROR,
    UNKNOWN_ENDPOINT_ERROR,
    WebhookDelivery,
)

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

    def __init__(self, endpoints: WebhookEndpoints, public_url: str | None) -> None:
        self._endpoints = endpoints
        self._public_url = public_url

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
            status = await self._post(endpoint, delivery, body)
        except ApplicationError as err:
            _count("rejected" if err.non_retryable else "failed", time.monotonic() - started)
            raise
        _count("delivered", time.monotonic() - started)
        return {"status": status, "attempt": activity.info().attempt}

    async def _post(self, endpoint: WebhookEndpoint, delivery: WebhookDelivery, body: bytes) -> int:
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"mcp-tasks-temporal/{__version__}",
            DELIVERY_HEADER: delivery.delivery_id,
            EVENT_HEADER: delivery.event,
            TIMESTAMP_HEADER: str(timestamp),
        }
        if endpoint.secret:
            headers[SIGNATURE_HEADER] = signature(endpoint.secret, timestamp, body)
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


def _count(outcome: str, seconds: float) -> None:
    meter = activity.metric_meter()
    meter.create_counter(WEBHOOK_DELIVERIES, "Webhook delivery attempts by outcome").add(
        1, {"outcome": outcome}
    )
    meter.create_histogram_float(
        # no unit: the exporter would append it to a name that already says seconds
        WEBHOOK_DELIVERY_SECONDS,
        "Time of one webhook delivery attempt (seconds)",
    ).record(seconds, {"outcome": outcome})
