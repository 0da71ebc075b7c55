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
The rules every path shares, and the follow-up tools' way in, are core/steering.py's.
"""

from __future__ import annotations

from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.steering import pause, resume, steer
from mcp_server.protocol.core.views import get_task_result
from mcp_server.protocol.frame.models import (
    CompleteResult,
    GetTaskResult,
    SteerTaskParams,
    TaskIdParams,
)

PREFIX = "mcp-tasks-temporal"
STEER_METHOD = f"{PREFIX}/steer"
PAUSE_METHOD = f"{PREFIX}/pause"
RESUME_METHOD = f"{PREFIX}/resume"


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
