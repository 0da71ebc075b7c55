"""`tools/call`: synchronous tools, MRTR rounds, and task creation (wire §1.6, §1.7, §2.1, §2.2).

Rules implemented:
- Unknown tool or arguments that fail the tool's inputSchema: -32602.
- `Mcp-Param-*` headers must mirror `x-mcp-header` arguments: -32020.
- A task-required tool called without the tasks extension: -32021 with requiredCapabilities.
- A capability the tool needs (e.g. elicitation for a task that asks) is checked before anything
  runs: -32021.
- MRTR: input a tool needs before it runs is asked with an InputRequiredResult whose
  `requestState` is HMAC-protected, expires, and binds tool, arguments and principal; a later
  round may depend on earlier answers (mrtr.py). MRTR rounds finish before a task is created;
  `requestState` never reaches a CreateTaskResult.
- A legacy `params.task` is ignored: only the per-request capability decides.
- CreateTaskResult is returned only when this request declared the extension.
"""

from __future__ import annotations

from typing import Any

from mcp_server.http.headers import check_param_headers, header_params
from mcp_server.protocol import capabilities, mrtr
from mcp_server.protocol.context import RequestContext, Services
from mcp_server.protocol.errors import invalid_params, missing_capability
from mcp_server.protocol.task_views import create_task_result
from mcp_server.protocol.wire import TASKS_CAPABILITY, declares_tasks, iso_now
from mcp_server.tasks.store import new_task_id
from mcp_server.tools.registry import Tool, ToolCall
from workflows.task_state import TaskInput


def _tool_and_arguments(ctx: RequestContext, services: Services) -> tuple[Tool, dict[str, Any]]:
    name = ctx.params.get("name")
    if not isinstance(name, str):
        raise invalid_params("params.name must be a string naming a tool")
    tool = services.registry.get(name)
    if tool is None:
        raise invalid_params(f"Unknown tool: {name}")
    arguments = ctx.params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise invalid_params("params.arguments must be an object")
    return tool, arguments


def _prelude_answers(
    ctx: RequestContext, services: Services, tool: Tool, arguments: dict[str, Any]
) -> dict[str, Any] | dict[str, dict[str, Any]]:
    """Answers to every input the tool needs up front, or an InputRequiredResult to send."""
    call = mrtr.Round(
        tool,
        arguments,
        ctx.capabilities,
        ctx.principal,
        request_state=ctx.params.get("requestState"),
        input_responses=ctx.params.get("inputResponses"),
    )
    outcome = mrtr.gather(call, services.request_state, services.limits)
    return outcome.answers if isinstance(outcome, mrtr.Gathered) else outcome.wire()


async def call_tool(ctx: RequestContext, services: Services) -> dict[str, Any]:
    tool, arguments = _tool_and_arguments(ctx, services)
    check_param_headers(ctx.headers, header_params(tool.input_schema), arguments)
    errors = services.registry.argument_errors(tool.name, arguments)
    if errors:
        raise invalid_params(
            f"Invalid arguments for tool {tool.name!r}: {'; '.join(errors)}", {"errors": errors}
        )
    as_task = declares_tasks(ctx.capabilities)
    if tool.task_support == "required" and not as_task:
        raise missing_capability(
            TASKS_CAPABILITY, f"tool {tool.name!r} runs only as a task (the tasks extension)"
        )
    capabilities.require(
        ctx.capabilities, tool.capabilities_for(arguments), f"tool {tool.name!r} needs it to run"
    )
    prelude = _prelude_answers(ctx, services, tool, arguments)
    if prelude.get("resultType") == "input_required":
        return prelude
    if tool.task_support == "never":
        assert tool.handler is not None
        return await tool.handler(ToolCall(tool.name, arguments, ctx.capabilities, prelude))
    assert tool.workflow is not None
    task = TaskInput(
        task_id=new_task_id(),
        tool=tool.name,
        arguments=arguments,
        created_at=iso_now(services.clock()),
        ttl_ms=tool.ttl_ms,
        poll_interval_ms=tool.poll_interval_ms,
        owner=ctx.principal,
        client_capabilities=ctx.capabilities,
        prelude_responses=prelude,
        secret_arguments=sorted(tool.secret_arguments),
        tool_config=tool.workflow_config,
    )
    if as_task:
        await services.limits.check_open_tasks(lambda: services.store.count_open(ctx.principal))
        return create_task_result(await services.store.create(task, tool.workflow))
    return await services.store.run_sync(task, tool.workflow, tool.sync_timeout_s)
