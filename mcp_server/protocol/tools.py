"""`tools/call`: synchronous tools, MRTR rounds, and task creation (wire §1.6, §1.7, §2.1, §2.2).

Rules implemented:
- Unknown tool or arguments that fail the tool's inputSchema: -32602.
- A tool's scopes the caller's credential lacks: HTTP 403 with a step-up challenge (grants.py).
- `Mcp-Param-*` headers must mirror `x-mcp-header` arguments: -32020.
- At 2026-07-28 a task-required tool called without the tasks extension: -32021 with
  requiredCapabilities. A capability the tool needs (e.g. elicitation for a task that asks) is
  checked before anything runs: -32021.
- MRTR: input a tool needs before it runs is asked with an InputRequiredResult whose
  `requestState` is HMAC-protected, expires, and binds tool, arguments and principal. MRTR rounds
  finish before a task is created; `requestState` never reaches a CreateTaskResult.
- A task: at 2026-07-28 when the request declares the extension (a `params.task` is ignored:
  only the per-request capability decides); at 2025-11-25 when the request carries `task`.
- Otherwise a task tool runs attached to the call (relay.py): the caller waits, sees progress
  and questions on the response stream, and gets either the result or, past the wait, a result
  that names the task and the follow-up tools. The task itself is never stopped for that.
  At 2026-07-28 the task's questions go to a client that can take them as MRTR rounds
  (rounds.py); a retry whose `requestState` names the task answers it and follows it
  again, and never starts a second task.
- The server's own follow-up tools (`task_status`, `task_respond`, `task_cancel`) are served here.
- A synchronous tool's log messages (`notifications/message`) go out on the call's stream: at
  2026-07-28 only when `_meta` names a `logLevel`, at that level and above (none without one);
  at 2025-11-25 at every level, since `logging/setLevel` would be session state that this
  stateless server does not keep.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from mcp_server.protocol.attached import followup_tools, rounds
from mcp_server.protocol.core import capabilities, idempotency, mrtr, related_tasks, relay
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.views import create_task_result, tool_result
from mcp_server.protocol.frame.errors import invalid_params, missing_capability
from mcp_server.protocol.frame.models import InputRequiredResult, ToolCallParams, related_task_ids
from mcp_server.protocol.frame.routing_headers import check_param_headers, header_params
from mcp_server.protocol.frame.wire import TASKS_CAPABILITY, iso_now
from mcp_server.protocol.v2025 import mrtr as v2025_mrtr
from mcp_server.protocol.v2025 import views as v2025_views
from mcp_server.tasks.idempotency import IdempotencyConflict
from mcp_server.tasks.store import new_task_id
from mcp_server.tools.registry import Tool, ToolCall
from mcp_tasks.contracts.task_state import TaskInput

# A 2026-07-28 request's opt-in to log messages (deprecated, still honoured): the least severe
# level it wants.
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"


def _tool(services: Services, params: ToolCallParams) -> tuple[Tool, dict[str, Any]]:
    tool = services.registry.get(params.name)
    if tool is None:
        raise invalid_params(f"Unknown tool: {params.name}")
    return tool, dict(params.arguments or {})


def _log_threshold(ctx: RequestContext, params: ToolCallParams) -> str | None:
    """The least severe level the caller wants log messages at, or None for none."""
    if not ctx.modern:
        return relay.LOG_LEVELS[0]
    level = (params.meta or {}).get(META_LOG_LEVEL)
    return level if level in relay.LOG_LEVELS else None


def _round(
    ctx: RequestContext, tool: Tool, arguments: dict[str, Any], params: ToolCallParams
) -> mrtr.Round:
    return mrtr.Round(
        tool,
        arguments,
        ctx.capabilities_dict(),
        ctx.principal,
        request_state=params.request_state,
        input_responses=params.input_responses,
    )


def _mrtr_answers(
    ctx: RequestContext,
    services: Services,
    tool: Tool,
    arguments: dict[str, Any],
    params: ToolCallParams,
) -> dict[str, Any] | InputRequiredResult:
    """Answers to every MRTR question the tool asks before it runs, or the InputRequiredResult
    to send."""
    outcome = mrtr.gather(
        _round(ctx, tool, arguments, params), services.request_state, services.limits
    )
    if isinstance(outcome, mrtr.Gathered):
        return outcome.answers
    return InputRequiredResult(
        input_requests=outcome.input_requests, request_state=outcome.request_state
    )


def _answerable(declared: dict[str, Any], strict: bool) -> dict[str, Any]:
    """The capabilities a task's workflow sees: outside a 2026-07-28 task, questions can
    always be answered (through task_respond), so the task may ask them."""
    return declared if strict else {**declared, "elicitation": declared.get("elicitation", {})}


async def call_tool(ctx: RequestContext, services: Services, params: ToolCallParams) -> BaseModel:
    if followup_tools.is_followup(params.name):
        return await followup_tools.call(ctx, services, params.name, dict(params.arguments or {}))
    tool, arguments = _tool(services, params)
    ctx.grant.require(tool.scopes, tool.name)  # 403 before anything runs (grants.py)
    check_param_headers(ctx.headers, header_params(tool.input_schema), arguments)
    errors = services.registry.argument_errors(tool.name, arguments)
    if errors:
        raise invalid_params(
            f"Invalid arguments for tool {tool.name!r}: {'; '.join(errors)}", {"errors": errors}
        )
    related = related_task_ids(params.meta)  # -32602 when malformed, in either era
    if ctx.modern and tool.task_support != "never":
        attached = mrtr.attached_task(_round(ctx, tool, arguments, params), services.request_state)
        if attached is not None:  # a round of a task already running: never a second task
            return await rounds.resume(
                ctx, services, tool, arguments, attached, params.input_responses
            )
    # Who may name approvers (approver_policy.py): refused before anything relay.
    services.approvers.check(ctx.identity, tool, arguments)
    # A task tool's call with an idempotency key names its task (protocol/core/idempotency.py).
    keyed = idempotency.keyed_call(ctx, params, tool.name, arguments)
    as_task = capabilities.declares_tasks(ctx.capabilities) if ctx.modern else bool(params.task)
    if ctx.modern and tool.task_support == "required" and not as_task:
        raise missing_capability(
            TASKS_CAPABILITY, f"tool {tool.name!r} runs only as a task (the tasks extension)"
        )
    # Only a 2026-07-28 task must be answerable by the client itself (tasks/update). Any
    # other task's questions reach the caller when it can take them, and can always be
    # answered through task_respond: nothing to refuse before the task starts.
    strict = ctx.modern and as_task
    if strict or tool.task_support == "never":
        capabilities.require(
            ctx.capabilities,
            tool.capabilities_for(arguments),
            f"tool {tool.name!r} needs it to run",
        )
    if ctx.modern:
        answers = _mrtr_answers(ctx, services, tool, arguments, params)
    else:  # 2025-11-25 has no InputRequiredResult: ask on the call's stream
        answers = await v2025_mrtr.gather(ctx, services, tool, arguments, params)
    if isinstance(answers, InputRequiredResult):
        return answers
    if tool.task_support == "never":
        assert tool.handler is not None
        call = ToolCall(
            tool.name,
            arguments,
            ctx.capabilities_dict(),
            answers,
            report_progress=relay.progress_reporter(ctx),
            log=relay.log_sender(ctx, _log_threshold(ctx, params)),
        )
        return tool_result(await tool.handler(call))
    assert tool.workflow is not None
    services.approvers.count(ctx.principal, tool, arguments)  # approver_policy.py
    related = await related_tasks.readable(ctx, services, related)  # as tasks/get finds them
    task = TaskInput(
        task_id=keyed.get("task_id") or new_task_id(),
        tool=tool.name,
        arguments=arguments,
        created_at=iso_now(services.clock()),
        ttl_ms=tool.ttl_ms,
        poll_interval_ms=tool.poll_interval_ms,
        owner=ctx.principal,
        client_capabilities=_answerable(ctx.capabilities_dict(), strict),
        prelude_responses=answers,
        secret_arguments=sorted(tool.secret_arguments),
        tool_config=tool.workflow_config,
        session=(ctx.session or "") if as_task and not ctx.modern else "",
        call_digest=keyed.get("call_digest", ""),
        requested_by=ctx.identity.name,
        webhooks=services.webhooks.for_tool(tool.name),
        related_task_ids=related,
        events=services.events is not None,
    )
    workflow = tool.workflow
    try:
        if not as_task:
            return await rounds.run(ctx, services, task, workflow, tool)
        snapshot = await services.limits.within_open_task_quota(
            lambda quota: services.store.create(task, workflow, quota)
        )
    except IdempotencyConflict as err:
        raise idempotency.conflict(err) from None
    if ctx.modern:
        return create_task_result(snapshot)
    return v2025_views.create_task_result(snapshot)
