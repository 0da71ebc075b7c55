"""`tasks/get`, `tasks/update` and `tasks/cancel` of the tasks extension (wire §2.5-§2.7, §2.12).

Gating order: routing headers (-32020, in the transport), `_meta` (-32602), the tasks extension
declared on this very request (-32021, the dispatch table's gate, before any lookup), then the
lookup (core/tasks.py: "not found", approvers, answers, cancellation).
- `tasks/update` delivers only answers to outstanding keys (core/tasks.py). A terminal task
  acks and changes nothing.
- `tasks/cancel` acks at once, terminal or not; the workflow ends `cancelled` soon after.
- Rate limits per principal, checked before the lookup (limits/rates.py): tasks/update and
  tasks/cancel calls, and lookups that end "not found" (on every method that looks a task up).
"""

from __future__ import annotations

from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.tasks import cancel, lookup, submit_answers, task_to_answer
from mcp_server.protocol.core.views import get_task_result
from mcp_server.protocol.frame.models import (
    CompleteResult,
    GetTaskResult,
    TaskIdParams,
    UpdateTaskParams,
)


async def get_task(ctx: RequestContext, services: Services, params: TaskIdParams) -> GetTaskResult:
    services.limits.polls.check(ctx.principal, params.task_id)
    snapshot = await lookup(ctx, services, params.task_id)
    services.limits.polls.learn_interval(ctx.principal, snapshot.task_id, snapshot.poll_interval_ms)
    return get_task_result(snapshot, ctx.capabilities)


async def update_task(
    ctx: RequestContext, services: Services, params: UpdateTaskParams
) -> CompleteResult:
    snapshot = await task_to_answer(ctx, services, params.task_id)
    await submit_answers(ctx, services, snapshot, params.input_responses)
    return CompleteResult()


async def cancel_task(
    ctx: RequestContext, services: Services, params: TaskIdParams
) -> CompleteResult:
    services.limits.rates.cancels.take(ctx.principal)
    await cancel(ctx, services, await lookup(ctx, services, params.task_id))
    return CompleteResult()
