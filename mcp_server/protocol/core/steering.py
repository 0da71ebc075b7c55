"""Steering a task: `mcp-tasks-temporal/steer`, `/pause`, `/resume` (docs/guides/steering.md).

The Task Interaction draft (`seps/0000-task-interaction.md`) proposes `tasks/steer`,
`tasks/pause` and `tasks/resume`; the `tasks/` prefix is the specification's until the draft is
accepted, so this server offers them under its own extension, `mcp-tasks-temporal/steering`
(advertised in `server/discover`, declared per request like the tasks extension).

Rules implemented:
- A request that does not declare the steering extension (and the tasks extension) gets -32021,
  before any lookup (the dispatch table's gate).
- The task is looked up as for `tasks/update`: a task that is missing, expired or someone else's
  is "not found" (-32602). Only the owner steers, pauses or resumes (APPROVER_CANNOT_STEER).
- Each counts against the caller's `tasks/update` rate, and is audited (`task.steer`,
  `task.pause`, `task.resume`); the message itself is never logged.
- A task that has ended: TASK_ENDED. A task whose tool does not take it (it does not declare
  `steering`, or `pausable`): NOT_STEERABLE, and nothing is sent: no task is paused by surprise.
- steer acks (`{"resultType": "complete"}`): the message is queued and delivered at the task's
  next safe point, in the order sent. pause and resume answer the task as `tasks/get` shows it
  now (the draft's `DetailedTask`); the task takes the request in at once, so the next
  `tasks/get` says `paused` (resumed: its status underneath). A pause of a paused task is
  ALREADY_PAUSED; a resume of a task that is not paused, NOT_PAUSED.
- `paused` is shown only to requests that declared the steering extension (client_view.py).
The follow-up tools `task_steer`, `task_pause` and `task_resume` (attached/followup_tools.py)
call the same functions, for hosts without tasks.
"""

from __future__ import annotations

from typing import Literal

from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.tasks import lookup
from mcp_server.protocol.core.views import get_task_result
from mcp_server.protocol.frame.errors import (
    ALREADY_PAUSED,
    APPROVER_CANNOT_STEER,
    NOT_PAUSED,
    NOT_STEERABLE,
    TASK_ENDED,
    McpError,
)
from mcp_server.protocol.frame.models import (
    CompleteResult,
    GetTaskResult,
    SteerTaskParams,
    TaskIdParams,
)
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_tasks.contracts.task_state import AuditStamp
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES
from workflows.steering import PAUSE_SIGNAL, RESUME_SIGNAL, STEER_SIGNAL, SteerInput

PREFIX = "mcp-tasks-temporal"
STEER_METHOD = f"{PREFIX}/steer"
PAUSE_METHOD = f"{PREFIX}/pause"
RESUME_METHOD = f"{PREFIX}/resume"
Ability = Literal["steering", "pausable"]
_VERB = {"steering": "steered", "pausable": "paused or resumed"}


async def steerable(
    ctx: RequestContext, services: Services, task_id: str, ability: Ability
) -> TaskSnapshot:
    """The caller's own open task, whose tool declares `ability`; else the refusal."""
    snapshot = await lookup(ctx, services, task_id)
    verb = _VERB[ability]
    if snapshot.owner != ctx.principal:
        raise McpError(
            APPROVER_CANNOT_STEER,
            f"Task {snapshot.task_id} can be {verb} only by the principal that created it: as "
            "an approver you may read it and answer the requests that name you",
        )
    if snapshot.status in TERMINAL_STATUSES:
        raise McpError(
            TASK_ENDED,
            f"Task {snapshot.task_id} has ended ({snapshot.status}): it can no longer be {verb}",
        )
    tool = services.registry.get(snapshot.tool)
    if tool is None or not getattr(tool, ability):
        key = "steering" if ability == "steering" else "pausable"
        raise McpError(
            NOT_STEERABLE,
            f"Task {snapshot.task_id} cannot be {verb}: its tool {snapshot.tool!r} does not "
            f"declare `{key}` (nothing was sent to the task)",
            {"tool": snapshot.tool},
        )
    return snapshot


def _stamp(ctx: RequestContext) -> AuditStamp:
    return AuditStamp(principal=ctx.principal, request_id=str(ctx.request_id))


async def steer(ctx: RequestContext, services: Services, task_id: str, message: str) -> None:
    services.limits.rates.updates.take(ctx.principal)
    snapshot = await steerable(ctx, services, task_id, "steering")
    update = SteerInput(
        message=message,
        principal=ctx.principal,
        request_id=str(ctx.request_id),
        by=ctx.identity.name,
    )
    await services.store.steer(snapshot.task_id, STEER_SIGNAL, update)


async def pause(ctx: RequestContext, services: Services, task_id: str) -> TaskSnapshot:
    services.limits.rates.updates.take(ctx.principal)
    snapshot = await steerable(ctx, services, task_id, "pausable")
    if snapshot.paused:
        raise McpError(ALREADY_PAUSED, f"Task {snapshot.task_id} is already paused")
    await services.store.steer(snapshot.task_id, PAUSE_SIGNAL, _stamp(ctx))
    return snapshot


async def resume(ctx: RequestContext, services: Services, task_id: str) -> TaskSnapshot:
    services.limits.rates.updates.take(ctx.principal)
    snapshot = await steerable(ctx, services, task_id, "pausable")
    if not snapshot.paused:
        raise McpError(NOT_PAUSED, f"Task {snapshot.task_id} is not paused")
    await services.store.steer(snapshot.task_id, RESUME_SIGNAL, _stamp(ctx))
    return snapshot


async def steer_task(
    ctx: RequestContext, services: Services, params: SteerTaskParams
) -> CompleteResult:
    await steer(ctx, services, params.task_id, params.message)
    return CompleteResult()


async def pause_task(
    ctx: RequestContext, services: Services, params: TaskIdParams
) -> GetTaskResult:
    return get_task_result(await pause(ctx, services, params.task_id), ctx.capabilities)


async def resume_task(
    ctx: RequestContext, services: Services, params: TaskIdParams
) -> GetTaskResult:
    return get_task_result(await resume(ctx, services, params.task_id), ctx.capabilities)
