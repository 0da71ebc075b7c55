"""What the webhook delivery workflow (workflows/delivery.py), its activity
(activities/delivery.py) and the server agree on: the workflow's and the activity's names, their
input, the errors the activity raises for what no retry can fix (the event deliveries raise
the same ones), and the names of the metrics both record (served on the worker's SDK metrics
port, MCP_TASKS_WORKER_METRICS_PORT)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

DELIVERY_WORKFLOW = "McpWebhookDelivery"
DELIVER_ACTIVITY = "mcp_tasks.deliver_webhook"
# ApplicationError types the activity raises for what no retry can fix.
REJECTED_ERROR = "WebhookRejected"
GONE_ERROR = "WebhookGone"  # the receiver answered 410 Gone: stop, as Standard Webhooks says
UNKNOWN_ENDPOINT_ERROR = "WebhookEndpointUnknown"
# Retried (after the suspension's wait): the endpoint failed for too long to be called now.
SUSPENDED_ERROR = "WebhookEndpointSuspended"
# Counted by outcome: each attempt by the activity, a delivery given up by the workflow.
# Outcome: delivered, failed (retried), rejected (a 4xx, not retried), gave_up (a day of
# retries went by).
# The SDK's exporter adds `_total` (MCP_TASKS_SDK_METRICS_TOTAL_SUFFIX).
DELIVERIES_METRIC = "mcp_tasks_webhook_deliveries"
# Its help text, the same wherever it is counted: the SDK's exporter keeps a series per
# description, so a zero declared with another one would be a second series of equal labels.
DELIVERIES_HELP = "Webhook delivery attempts by outcome"
# The time of one attempt, by the activity (seconds; declared with no unit: the exporter
# would append it to a name that already says seconds).
DELIVERY_SECONDS_METRIC = "mcp_tasks_webhook_delivery_duration_seconds"
# 1 while a worker suspends an endpoint after sustained failure (activities/webhook_health.py),
# by endpoint; the McpTasksWebhookEndpointSuspended alert reads it.
SUSPENDED_METRIC = "mcp_tasks_webhook_endpoint_suspended"
DELIVERY_SECONDS_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class QuestionView(TypedDict):
    """One question of a task as a notification tells it: its key and message only."""

    key: str
    message: str
    approvers: NotRequired[list[str]]  # whose decision it awaits (names as configured)


class TaskView(TypedDict):
    """What a notification tells of its task (workflows/webhooks.py `task_view`): webhooks and
    event subscriptions carry it as this JSON object."""

    taskId: str
    tool: str
    status: str
    statusMessage: str | None
    createdAt: str
    lastUpdatedAt: str
    inputRequests: list[QuestionView]
    requestedBy: NotRequired[str]
    progress: NotRequired[dict[str, float]]


class WebhookOutcome(TypedDict):
    """A delivered notification: the receiver's HTTP status and the attempt that delivered it
    (the `McpWebhookDelivery` workflow's result)."""

    status: int
    attempt: int


@dataclass
class WebhookDelivery:
    """One notification: the child workflow's input and its activity's."""

    delivery_id: str
    endpoint: str
    event: str
    occurred_at: str
    # taskId, tool, status, statusMessage, createdAt, lastUpdatedAt, inputRequests
    # ([{key, message}]), progress ({progress, total?}, when the task reported numbers): the
    # task as its memo shows it (redacted like the memo).
    task: dict[str, Any]
    # The task's history length when the event happened (plus that of its runs before a
    # continue-as-new): a number per task that only grows. None in deliveries started before.
    sequence: int | None = None
