"""`tasks/get`, `tasks/update` and `tasks/cancel` of the tasks extension (wire §2.5-§2.7, §2.12).

Gating order: routing headers (-32020, in the transport), `_meta` (-32602), the tasks extension
declared on this very request (-32021, the dispatch table's gate, before any lookup), then the
lookup. A task that does not exist, has passed its TTL, or belongs to another principal answers
the same -32602, at the same time (tasks/access.py).
- `tasks/update` delivers only answers to outstanding keys; never issued, already answered or
  superseded keys are ignored whatever their value. Each delivered answer must be a valid
  response to its request (-32602). A terminal task acks and changes nothing.
- `tasks/cancel` acks at once, terminal or not; the workflow ends `cancelled` soon after.
- Rate limits per principal, checked before the lookup (rate_limits.py): tasks/update and
  tasks/cancel calls, and lookups that end "not found" (on every method that looks a task up).
"""

from __future__ import annotations

from mcp_server.protocol.context import RequestContext, Services
from mcp_server.protocol.models import (
    CompleteResult,
    GetTaskResult,
    TaskIdParams,
    UpdateTaskParams,
    check_input_response,
)
from mcp_server.protocol.task_views import get_task_result
from mcp_server.tasks.access import require_task
from mcp_server.tasks.snapshots import TaskSnapshot
from workflows.task_state import TERMINAL_STATUSES, AuditStamp, SubmitInput


async def lookup(ctx: RequestContext, services: Services, task_id: str) -> TaskSnapshot:
    """The caller's task, or "not found" (counted by the caller's "not found" limit)."""
    misses = services.limits.rates.misses
    return await require_task(services.store, task_id, ctx.principal, services.clock, misses)


async def get_task(ctx: RequestContext, services: Services, params: TaskIdParams) -> GetTaskResult:
    services.limits.polls.check(ctx.principal, params.task_id)
    snapshot = await lookup(ctx, services, params.task_id)
    services.limits.polls.learn_interval(ctx.principal, snapshot.task_id, snapshot.poll_interval_ms)
    return get_task_result(snapshot)


async def submit_answers(
    ctx: RequestContext, services: Services, task_id: str, responses: dict[str, object]
) -> None:
    """Deliver the answers to a task's outstanding input requests (tasks/update, and a
    2025-11-25 client's responses to the requests the server sent it)."""
    services.limits.check_input_responses(responses)
    snapshot = await lookup(ctx, services, task_id)
    if snapshot.status in TERMINAL_STATUSES:
        return
    outstanding = {k: v for k, v in responses.items() if k in snapshot.input_requests}
    for key, response in outstanding.items():
        error = check_input_response(key, snapshot.input_requests[key], response)
        if error is not None:
            raise error
    if outstanding:
        update = SubmitInput(
            responses=outstanding, request_id=str(ctx.request_id), principal=ctx.principal
        )
        await services.store.submit_input(snapshot.task_id, update)


async def update_task(
    ctx: RequestContext, services: Services, params: UpdateTaskParams
) -> CompleteResult:
    services.limits.rates.updates.take(ctx.principal)
    await submit_answers(ctx, services, params.task_id, params.input_responses)
    return CompleteResult()


async def cancel(ctx: RequestContext, services: Services, task_id: str) -> None:
    """Request the cancellation of the caller's task (the caller's cancel limit is checked by
    each method, before its lookup)."""
    snapshot = await lookup(ctx, services, task_id)
    if snapshot.status not in TERMINAL_STATUSES:
        stamp = AuditStamp(principal=ctx.principal, request_id=str(ctx.request_id))
        await services.store.cancel(snapshot.task_id, stamp)


async def cancel_task(
    ctx: RequestContext, services: Services, params: TaskIdParams
) -> CompleteResult:
    services.limits.rates.cancels.take(ctx.principal)
    await cancel(ctx, services, params.task_id)
    return CompleteResult()
