"""`tasks/get`, `tasks/update` and `tasks/cancel` (wire §2.5-§2.7, §2.12).

Gating order: routing headers (-32020, in the transport), `_meta` (-32602), the tasks extension
declared on this very request (-32021, before any lookup), then the lookup. A task that does not
exist, has passed its TTL, or belongs to another principal answers the same -32602.
"""

from __future__ import annotations

from typing import Any

from mcp_server.protocol import capabilities
from mcp_server.protocol.context import RequestContext, Services
from mcp_server.protocol.errors import invalid_params, task_not_found
from mcp_server.protocol.task_views import get_task_result
from mcp_server.protocol.wire import TASKS_CAPABILITY, TERMINAL_STATUSES
from mcp_server.tasks.access import find_task
from mcp_server.tasks.snapshots import TaskSnapshot
from workflows.task_state import AuditStamp, SubmitInput

ACK: dict[str, Any] = {"resultType": "complete"}


def _require_extension(ctx: RequestContext) -> None:
    capabilities.require(
        ctx.capabilities, TASKS_CAPABILITY, f"{ctx.method} belongs to the tasks extension"
    )


def _task_id(ctx: RequestContext) -> str:
    """The requested taskId, once the extension gate (-32021, before any lookup) is passed."""
    _require_extension(ctx)
    task_id = ctx.params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise invalid_params("params.taskId must be a non-empty string")
    return task_id


async def _lookup(ctx: RequestContext, services: Services, task_id: str) -> TaskSnapshot:
    snapshot = await find_task(services.store, task_id, ctx.principal, services.clock)
    if snapshot is None:
        raise task_not_found()
    return snapshot


async def get_task(ctx: RequestContext, services: Services) -> dict[str, Any]:
    task_id = _task_id(ctx)
    services.limits.polls.check(ctx.principal, task_id)
    snapshot = await _lookup(ctx, services, task_id)
    services.limits.polls.learn_interval(ctx.principal, snapshot.task_id, snapshot.poll_interval_ms)
    return get_task_result(snapshot)


async def update_task(ctx: RequestContext, services: Services) -> dict[str, Any]:
    snapshot = await _lookup(ctx, services, _task_id(ctx))
    responses = ctx.params.get("inputResponses")
    if not isinstance(responses, dict):
        raise invalid_params("params.inputResponses must be an object")
    services.limits.check_input_responses(responses)
    if snapshot.status in TERMINAL_STATUSES:
        return dict(ACK)
    # Only outstanding keys are delivered; never issued, already answered or superseded keys
    # are ignored whatever their value, as the spec asks.
    outstanding = {k: v for k, v in responses.items() if k in snapshot.input_requests}
    for key, response in outstanding.items():
        error = capabilities.check_input_response(key, snapshot.input_requests[key], response)
        if error is not None:
            raise error
    if outstanding:
        await services.store.submit_input(
            snapshot.task_id,
            SubmitInput(
                responses=outstanding, request_id=str(ctx.request_id), principal=ctx.principal
            ),
        )
    return dict(ACK)


async def cancel_task(ctx: RequestContext, services: Services) -> dict[str, Any]:
    snapshot = await _lookup(ctx, services, _task_id(ctx))
    if snapshot.status not in TERMINAL_STATUSES:
        stamp = AuditStamp(principal=ctx.principal, request_id=str(ctx.request_id))
        await services.store.cancel(snapshot.task_id, stamp)
    return dict(ACK)
