"""Steering a task, the rules every path shares: the extension's methods
(v2026/steering.py) and the follow-up tools `task_steer`, `task_pause`, `task_resume`
(attached/followup_tools.py) call the same functions (docs/guides/steering.md).

- The task is looked up as for `tasks/update`: a task that is missing, expired or someone else's
  is "not found" (-32602). Only the owner steers, pauses or resumes (APPROVER_CANNOT_STEER).
- Each counts against the caller's `tasks/update` rate.
- A task that has ended: TASK_ENDED. A task whose tool does not take it (it does not declare
  `steering`, or `pausable`): NOT_STEERABLE, and nothing is sent: no task is paused by surprise.
- A steer message is queued and delivered at the task's next safe point, in the order sent; the
  task takes a pause or resume in at once. A pause of a paused task is ALREADY_PAUSED; a resume
  of a task that is not paused, NOT_PAUSED.
"""

from __future__ import annotations

from typing import Literal

from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.tasks import lookup
from mcp_server.protocol.frame.errors import (
    ALREADY_PAUSED,
    APPROVER_CANNOT_STEER,
    NOT_PAUSED,
    NOT_STEERABLE,
    TASK_ENDED,
    McpError,
)
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_tasks.contracts.task_state import AuditStamp
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES
from workflows.steering import PAUSE_SIGNAL, RESUME_SIGNAL, STEER_SIGNAL, SteerInput

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
