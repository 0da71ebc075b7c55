"""What an operator's webhook says (activities/delivery.py POSTs it): the body of a task's
notification, in the endpoint's format.

Rules implemented:
- `json` (the default): {"id": delivery id, "event", "occurredAt", "sequence" (a number per
  task that only grows: a receiver drops an event older than one it has), "task": {taskId,
  tool, status, statusMessage, createdAt, lastUpdatedAt, inputRequests: [{key, message}],
  progress?: {progress, total?}}, "inboxUrl": <public URL>/inbox/tasks/<taskId> when
  MCP_TASKS_PUBLIC_URL is set}.
- `slack`: {"text": ...}, what a Slack incoming webhook takes: one line of what happened, the
  questions, a link to the inbox; `&`, `<` and `>` escaped as Slack wants.
"""

from __future__ import annotations

from typing import Any

from mcp_tasks.contracts.webhooks import WebhookDelivery
from mcp_tasks.webhooks.endpoints import WebhookEndpoint


def webhook_body(
    endpoint: WebhookEndpoint, delivery: WebhookDelivery, public_url: str | None
) -> dict[str, Any]:
    """The body of `delivery` in `endpoint`'s format."""
    build = slack_body if endpoint.format == "slack" else delivery_body
    return build(delivery, public_url)


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
