"""The task rules every path shares: finding the caller's task, delivering answers to it,
cancelling it. `tasks/get`, `tasks/update`, `tasks/cancel` of both eras, the follow-up tools,
a 2025-11-25 client's responses, attached rounds and the inbox all come through here.

- A task that does not exist, has passed its TTL, or belongs to another principal answers
  the same -32602, at the same time (tasks/access.py); lookups that end "not found" count
  against the caller's own limit (limits/rates.py).
- A path reads the task once: what it reads (`lookup`) is what answers and cancellations act on.
- Answers: only answers to outstanding keys are delivered; never issued, already answered or
  superseded keys are ignored whatever their value. Each delivered answer must be a valid
  response to its request (-32602). A terminal task changes nothing.
- Whoever answers (`tasks/update`, the inbox) spends the caller's `tasks/update` rate before
  the lookup (`task_to_answer`).
- Approvers (tasks/approvers.py): an approver of a task finds it like its owner; a request
  that names approvers is answered only by them, the owner included only when named, and a
  request without approvers only by the owner (NOT_AN_APPROVER, -32602, naming who can);
  only the owner cancels (APPROVER_CANNOT_CANCEL) unless MCP_TASKS_APPROVERS_MAY_CANCEL.
  Every path that answers or cancels comes through here, so the rule is the same in both eras.
"""

from __future__ import annotations

from mcp_server.protocol.core import audit
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.frame.errors import APPROVER_CANNOT_CANCEL, NOT_AN_APPROVER, McpError
from mcp_server.protocol.frame.models import check_input_response
from mcp_server.tasks.access import require_task
from mcp_server.tasks.approvers import may_answer
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_tasks.contracts.approvers import describe_approvers
from mcp_tasks.contracts.task_state import AuditStamp, SubmitInput
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES


async def lookup(ctx: RequestContext, services: Services, task_id: str) -> TaskSnapshot:
    """The caller's task, or "not found" (counted by the caller's "not found" limit)."""
    misses = services.limits.rates.misses
    return await require_task(
        services.store, task_id, ctx.principal, services.clock, misses, ctx.identity
    )


async def task_to_answer(ctx: RequestContext, services: Services, task_id: str) -> TaskSnapshot:
    """The task a caller is about to answer (tasks/update, the inbox): the caller's tasks/update
    rate is spent first, then the task is looked up."""
    services.limits.rates.updates.take(ctx.principal)
    return await lookup(ctx, services, task_id)


async def submit_answers(
    ctx: RequestContext, services: Services, snapshot: TaskSnapshot, responses: dict[str, object]
) -> None:
    """Deliver the answers to the outstanding input requests of the task as `lookup` read it
    (tasks/update, the inbox, task_respond, attached rounds, and a 2025-11-25 client's responses
    to the requests the server sent it)."""
    services.limits.check_input_responses(responses)
    if snapshot.status in TERMINAL_STATUSES:
        return
    outstanding = {k: v for k, v in responses.items() if k in snapshot.input_requests}
    for key in outstanding:
        if not may_answer(key, snapshot.owner, snapshot.approvers, ctx.principal, ctx.identity):
            raise not_an_approver(snapshot, key)
    for key, response in outstanding.items():
        error = check_input_response(key, snapshot.input_requests[key], response)
        if error is not None:
            raise error
    if outstanding:
        update = SubmitInput(
            responses=outstanding,
            request_id=str(ctx.request_id),
            principal=ctx.principal,
            by=ctx.identity.name,
        )
        await services.store.submit_input(snapshot.task_id, update)
        decided = sorted(key for key in outstanding if snapshot.approvers.get(key))
        if decided:
            audit.decided(ctx, snapshot.task_id, decided)


def not_an_approver(snapshot: TaskSnapshot, key: str) -> McpError:
    """The refusal of an answer to `key` by a caller who may not give it."""
    names = snapshot.approvers.get(key)
    if names:
        who = describe_approvers(names)
        message = (
            f"Input request {key!r} of task {snapshot.task_id} can be answered only by its "
            f"approvers: {who}; your credential is not one of them"
        )
    else:
        message = (
            f"Input request {key!r} of task {snapshot.task_id} can be answered only by the "
            "principal that created the task"
        )
    return McpError(NOT_AN_APPROVER, message, {"key": key, "approvers": names or []})


async def cancel(ctx: RequestContext, services: Services, snapshot: TaskSnapshot) -> None:
    """Request the cancellation of the task as `lookup` read it (the caller's cancel limit is
    checked by each method, before its lookup)."""
    if snapshot.owner != ctx.principal and not services.approvers_may_cancel:
        raise McpError(
            APPROVER_CANNOT_CANCEL,
            f"Task {snapshot.task_id} can be cancelled only by the principal that created it: "
            "as an approver you may read it and answer the requests that name you",
        )
    if snapshot.status not in TERMINAL_STATUSES:
        stamp = AuditStamp(principal=ctx.principal, request_id=str(ctx.request_id))
        await services.store.cancel(snapshot.task_id, stamp)
