"""What an attached call answers once it stops waiting, and the MRTR rounds (wire §1.6) that
carry a running task's questions to a 2026-07-28 client without the tasks extension.

Rules implemented:
- A task that ended: its outcome (relay.outcome).
- At 2026-07-28, a task waiting on questions this request can take (it declared the capability
  each needs, and may answer each key): an InputRequiredResult asking them, under the task's
  own keys, whose `requestState` (HMAC-signed, expiring, bound to tool, arguments and
  principal like a tool's MRTR state) names the task. A client's retry with `inputResponses`
  and that state never starts a second task: its answers go to the named task as a `tasks/update`
  would deliver them, and the call follows that task again (another round, its result, or the
  follow-up result).
- An answer the task refuses (not a valid response to its question) is asked again at once,
  its message prefixed with what was wrong; after `MAX_REFUSED` refusals the call returns the
  follow-up result naming what was wrong (a client that keeps sending the same answer would
  otherwise spend its rounds; the model can still answer with `task_respond`). At 2025-11-25
  the same holds for a question relayed on the call's stream (refused_answers.py).
- Anything else (a question the client cannot take, a task still working past the wait):
  the follow-up result, which is never an error.
"""

from __future__ import annotations

import copy
from typing import Any

import mcp_types as core
from pydantic import BaseModel

from mcp_server.protocol.attached.followup_tools import FOLLOW_UP_TOOLS
from mcp_server.protocol.core import mrtr, relay, tasks
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.refused_answers import MAX_REFUSED, Refusals
from mcp_server.protocol.frame.errors import INVALID_PARAMS, McpError, task_not_found
from mcp_server.protocol.frame.models import InputRequiredResult
from mcp_server.protocol.frame.request_state import PendingRound, canonical_digest
from mcp_server.protocol.frame.wire import V2026
from mcp_server.tasks.access import find_task
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tools.registry import InputRequests, Tool
from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES


def follow_up_result(tool: str, snapshot: TaskSnapshot, problem: str = "") -> core.CallToolResult:
    """The answer of a call whose task runs on: never an error (the task has not failed), valid
    against the tool's listed outputSchema (followup.listed_output_schema), naming the taskId
    in its text and structured content, and telling the model not to call the tool again
    (which would start a second run) but to go on with the follow-up tools. `problem` says
    what was wrong with an answer the call could not deliver."""
    task_id = snapshot.task_id
    state = snapshot.status_message or snapshot.status
    waiting = " It is waiting for an answer." if snapshot.status == "input_required" else ""
    rejected = f" Your answer was not accepted: {problem}." if problem else ""
    text = (
        f"`{tool}` has not finished yet: it is still running on the server as task "
        f"{task_id} ({state}).{waiting}{rejected} Do not call `{tool}` again: that would "
        f"start a second, separate run. To continue this one, call `task_status` with "
        f'{{"taskId": "{task_id}"}} to read its progress or its result, `task_respond` to '
        "answer its question, or `task_cancel` to stop it."
    )
    structured: dict[str, Any] = {"taskId": task_id, "status": snapshot.status}
    if snapshot.status_message is not None:
        structured["statusMessage"] = snapshot.status_message
    structured["followUpTools"] = list(FOLLOW_UP_TOOLS)
    return core.CallToolResult(
        content=[core.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=False,
    )


async def run(
    ctx: RequestContext, services: Services, task: TaskInput, workflow: str, tool: Tool
) -> BaseModel:
    """Run `task` attached to the call and answer what the call should (see the module)."""
    refusals = Refusals()
    snapshot = await relay.run_attached(
        ctx, services, task, workflow, tool.sync_timeout_s, refusals
    )
    problem = refusals.last_problem if refusals.exhausted else ""
    return reply(ctx, services, tool.name, task.arguments, snapshot, problem=problem)


def reply(
    ctx: RequestContext,
    services: Services,
    tool: str,
    arguments: dict[str, Any],
    snapshot: TaskSnapshot,
    *,
    refused: int = 0,
    problem: str = "",
) -> BaseModel:
    """The answer of an attached call that stopped following its task at `snapshot`."""
    if snapshot.status in TERMINAL_STATUSES:
        return relay.outcome(snapshot)
    questions = _askable(ctx, snapshot)
    if questions is None:
        return follow_up_result(tool, snapshot, problem)
    pending = PendingRound(
        tool, canonical_digest(arguments), ctx.principal, {}, snapshot.task_id, refused
    )
    return InputRequiredResult(
        input_requests={
            key: dict(request) for key, request in _with_problem(questions, problem).items()
        },
        request_state=services.request_state.encode(pending),
    )


def _askable(ctx: RequestContext, snapshot: TaskSnapshot) -> InputRequests | None:
    """The task's questions when this 2026-07-28 request can take every one of them."""
    if ctx.era != V2026 or snapshot.status != "input_required" or not snapshot.input_requests:
        return None
    requests = snapshot.input_requests
    if not all(relay.can_answer(ctx, request, snapshot, key) for key, request in requests.items()):
        return None
    return copy.deepcopy(requests)


def _with_problem(questions: InputRequests, problem: str) -> InputRequests:
    """The questions, each message saying first why the last answer was refused."""
    if not problem:
        return questions
    for request in questions.values():
        params = request.setdefault("params", {})
        message = params.get("message", "")
        params["message"] = f"Your previous answer was not accepted: {problem}. {message}"
    return questions


async def resume(
    ctx: RequestContext,
    services: Services,
    tool: Tool,
    arguments: dict[str, Any],
    pending: PendingRound,
    input_responses: object,
) -> BaseModel:
    """A retry of a task's round: deliver its answers to that task, then follow it again.
    Answers spend the caller's tasks/update bucket; the lookup its "not found" bucket."""
    responses = mrtr.responses_of(input_responses, services.limits)
    rates = services.limits.rates
    if responses:
        rates.updates.take(ctx.principal)
    snapshot = await find_task(
        services.store,
        pending.task_id,
        ctx.principal,
        services.clock,
        rates.misses,
        identity=ctx.identity,
    )
    if snapshot is None:
        raise task_not_found()
    answers = {key: value for key, value in responses.items() if key in snapshot.input_requests}
    if answers and snapshot.status not in TERMINAL_STATUSES:
        try:
            await tasks.submit_answers(ctx, services, snapshot, answers)
        except McpError as err:
            if err.code != INVALID_PARAMS:
                raise
            refused = pending.refused + 1
            if refused >= MAX_REFUSED:
                return follow_up_result(tool.name, snapshot, err.message)
            return reply(
                ctx, services, tool.name, arguments, snapshot, refused=refused, problem=err.message
            )
    wait = relay.attached_wait(services, tool.sync_timeout_s)
    snapshot = await relay.follow(ctx, services, snapshot.task_id, wait, until_stuck=True)
    return reply(ctx, services, tool.name, arguments, snapshot)
