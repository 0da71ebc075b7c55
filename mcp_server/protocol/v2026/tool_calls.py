"""`tools/call` at 2026-07-28: MRTR rounds and task creation (wire §1.6, §1.7, §2.1, §2.2).

What both eras share is core/tool_calls.py's; at 2026-07-28:
- A task when the request declares the tasks extension (a `params.task` is ignored: only the
  per-request capability decides). A task-required tool called without it: -32021 with
  requiredCapabilities. Only such a task must be answerable by the client itself
  (tasks/update), so only its capabilities are required before it starts.
- MRTR: input a tool needs before it runs is asked with an InputRequiredResult whose
  `requestState` is HMAC-protected, expires, and binds tool, arguments and principal
  (core/mrtr.py). MRTR rounds finish before a task is created; `requestState` never reaches a
  CreateTaskResult.
- Otherwise a task tool runs attached to the call (attached/): the caller waits, sees progress
  and, as MRTR rounds, the task's questions it can take; a retry whose `requestState` names
  the task answers it and follows it again, and never starts a second task.
- A synchronous tool's log messages (`notifications/message`) go out on the call's stream only
  when `_meta` names a `logLevel`, at that level and above (none without one).
"""

from __future__ import annotations

from pydantic import BaseModel

from mcp_server.protocol.core import capabilities, mrtr, relay, tool_calls
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.tool_calls import AttachedRuns, Call
from mcp_server.protocol.core.views import create_task_result
from mcp_server.protocol.frame.errors import missing_capability
from mcp_server.protocol.frame.models import InputRequiredResult, ToolCallParams
from mcp_server.protocol.frame.wire import TASKS_CAPABILITY

# A request's opt-in to log messages (deprecated, still honoured): the least severe level it
# wants.
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"


async def call_tool(
    ctx: RequestContext, services: Services, params: ToolCallParams, attached: AttachedRuns
) -> BaseModel:
    call = tool_calls.prepare(ctx, services, params)
    tool = call.tool
    if tool.task_support != "never":
        pending = mrtr.attached_task(_round(ctx, call), services.request_state)
        if pending is not None:  # a round of a task already running: never a second task
            return await attached.resume(
                ctx, services, tool, call.arguments, pending, params.input_responses
            )
    keyed = tool_calls.admit(ctx, services, call)
    as_task = capabilities.declares_tasks(ctx.capabilities)
    if tool.task_support == "required" and not as_task:
        raise missing_capability(
            TASKS_CAPABILITY, f"tool {tool.name!r} runs only as a task (the tasks extension)"
        )
    tool_calls.require_capabilities(ctx, call, strict=as_task)
    answers = mrtr.gather(_round(ctx, call), services.request_state, services.limits)
    if isinstance(answers, mrtr.InputRequired):
        return InputRequiredResult(
            input_requests={key: dict(request) for key, request in answers.input_requests.items()},
            request_state=answers.request_state,
        )
    if tool.task_support == "never":
        return await tool_calls.run_sync(ctx, call, answers.answers, _log_threshold(params))
    task = await tool_calls.task_input(ctx, services, call, answers.answers, keyed, strict=as_task)
    if not as_task:
        return await tool_calls.run_attached(ctx, services, task, tool, attached)
    return create_task_result(await tool_calls.create(services, task, tool))


def _round(ctx: RequestContext, call: Call) -> mrtr.Round:
    return mrtr.Round(
        call.tool,
        call.arguments,
        ctx.capabilities_dict(),
        ctx.principal,
        request_state=call.params.request_state,
        input_responses=call.params.input_responses,
    )


def _log_threshold(params: ToolCallParams) -> str | None:
    """The least severe level the caller wants log messages at, or None for none."""
    level = (params.meta or {}).get(META_LOG_LEVEL)
    return level if level in relay.LOG_LEVELS else None
