"""What operators see of webhook deliveries still retrying (`mcp-tasks tasks webhooks`), read
from Temporal, so it holds whichever worker made the attempts and survives every restart.

Rules implemented:
- The running `McpWebhookDelivery` workflows of the task queue (at most `limit`), each with its
  endpoint and event (its summary), its attempts so far and the last failure recorded.
- An endpoint is shown `suspended` when the last failure of its most recent attempt is the
  worker's suspension (activities/webhook_health.py): its deliveries wait for it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from temporalio.client import Client

from mcp_tasks.contracts.webhooks import DELIVERY_WORKFLOW, SUSPENDED_ERROR

DEFAULT_LIMIT = 200


@dataclass(frozen=True)
class PendingDelivery:
    delivery_id: str
    endpoint: str
    event: str
    attempts: int
    last_failure: str
    suspended: bool


@dataclass(frozen=True)
class EndpointBacklog:
    endpoint: str
    pending: int
    suspended: bool
    most_attempts: int
    last_failure: str


async def pending_deliveries(
    client: Client, task_queue: str, limit: int = DEFAULT_LIMIT
) -> list[PendingDelivery]:
    query = (
        f'WorkflowType = "{DELIVERY_WORKFLOW}" AND ExecutionStatus = "Running" '
        f'AND TaskQueue = "{task_queue}"'
    )
    found: list[PendingDelivery] = []
    async for execution in client.list_workflows(query, limit=limit):
        description = await client.get_workflow_handle(execution.id).describe()
        # "webhook <event> to <endpoint>" (workflows/webhooks.py)
        summary: object = description.static_summary()
        if inspect.isawaitable(summary):  # a coroutine in some SDK versions
            summary = await summary
        words = str(summary or "").split()
        event, endpoint = (words[1], words[3]) if len(words) == 4 else ("?", "?")
        pending = description.raw_description.pending_activities
        attempts, failure, suspended = 0, "", False
        if pending:
            attempts = max(pending[0].attempt - 1, 0)
            last = pending[0].last_failure
            failure = last.message
            suspended = last.application_failure_info.type == SUSPENDED_ERROR
        found.append(PendingDelivery(execution.id, endpoint, event, attempts, failure, suspended))
    return found


def by_endpoint(deliveries: list[PendingDelivery]) -> list[EndpointBacklog]:
    """One line per endpoint: how many wait, whether it is suspended, the worst case."""
    endpoints = sorted({d.endpoint for d in deliveries})
    backlog = []
    for endpoint in endpoints:
        own = [d for d in deliveries if d.endpoint == endpoint]
        worst = max(own, key=lambda d: d.attempts)
        backlog.append(
            EndpointBacklog(
                endpoint,
                len(own),
                any(d.suspended for d in own),
                worst.attempts,
                worst.last_failure,
            )
        )
    return backlog
