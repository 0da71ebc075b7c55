"""`tools/call`, what both eras share (wire §1.7, §2.1, §2.2): each era's entry
(v2026/tool_calls.py, v2025/tool_calls.py) calls these steps in this order.

Rules implemented:
- Unknown tool or arguments that fail the tool's inputSchema: -32602.
- A tool's scopes the caller's credential lacks: HTTP 403 with a step-up challenge (grants.py).
- `Mcp-Param-*` headers must mirror `x-mcp-header` arguments: -32020.
- `relatedTaskIds` in `_meta`: -32602 when malformed, in either era; only the tasks the caller
  may read reach the task (related_tasks.py).
- Who may name approvers (approver_policy.py) is checked before anything runs; a task tool's
  call with an idempotency key names its task (idempotency.py), and a key already naming
  another call's task is -32602.
- A capability the tool needs (e.g. elicitation for a task that asks) is checked before
  anything runs (-32021), for a synchronous tool and a task the client must answer itself.
- A synchronous tool's progress and log messages go out on the call's stream (attached runs'
  senders, relay.py).
- A task tool's task is created exactly as for a task-aware client whether the caller waits on
  it or not; a host that does not use tasks runs it attached to the call (`AttachedRuns`,
  attached/rounds.py), which the dispatch table's `tools/call` hands in (protocol/tools.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as core
from pydantic import BaseModel

from mcp_server.protocol.core import capabilities, idempotency, related_tasks, relay
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.views import tool_result
from mcp_server.protocol.frame.errors import invalid_params
from mcp_server.protocol.frame.models import ToolCallParams, related_task_ids
from mcp_server.protocol.frame.request_state import PendingRound
from mcp_server.protocol.frame.routing_headers import check_param_headers, header_params
from mcp_server.protocol.frame.wire import iso_now
from mcp_server.tasks.idempotency import IdempotencyConflict
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.store import new_task_id
from mcp_server.tools.registry import Tool, ToolCall
from mcp_tasks.contracts.task_state import TaskInput


class AttachedRuns(Protocol):
    """A task tool's run for a host that does not use tasks (attached/rounds.py)."""

    async def run(
        self, ctx: RequestContext, services: Services, task: TaskInput, workflow: str, tool: Tool
    ) -> BaseModel: ...

    async def resume(
        self,
        ctx: RequestContext,
        services: Services,
        tool: Tool,
        arguments: dict[str, Any],
        pending: PendingRound,
        input_responses: object,
    ) -> BaseModel: ...


@dataclass(frozen=True)
class Call:
    """A `tools/call` of a known tool whose arguments the tool accepts."""

    tool: Tool
    arguments: dict[str, Any]
    params: ToolCallParams
    # `relatedTaskIds` as the request named them (not yet checked against what it may read).
    related: list[str]


def prepare(ctx: RequestContext, services: Services, params: ToolCallParams) -> Call:
    """The tool, its scopes, routing headers and arguments checked; the related task ids read."""
    tool = services.registry.get(params.name)
    if tool is None:
        raise invalid_params(f"Unknown tool: {params.name}")
    arguments = dict(params.arguments or {})
    ctx.grant.require(tool.scopes, tool.name)  # 403 before anything runs (grants.py)
    check_param_headers(ctx.headers, header_params(tool.input_schema), arguments)
    errors = services.registry.argument_errors(tool.name, arguments)
    if errors:
        raise invalid_params(
            f"Invalid arguments for tool {tool.name!r}: {'; '.join(errors)}", {"errors": errors}
        )
    return Call(tool, arguments, params, related_task_ids(params.meta))


def admit(ctx: RequestContext, services: Services, call: Call) -> dict[str, str]:
    """Whether the caller may name the approvers it names; the TaskInput fields of a keyed
    call ({} without an idempotency key)."""
    services.approvers.check(ctx.identity, call.tool, call.arguments)
    return idempotency.keyed_call(ctx, call.params, call.tool.name, call.arguments)


def require_capabilities(ctx: RequestContext, call: Call, *, strict: bool) -> None:
    """A synchronous tool, or a task the client must answer itself (`strict`), needs the
    client capabilities the tool asks for. Any other task's questions reach the caller when it
    can take them, and can always be answered through task_respond: nothing to refuse."""
    if strict or call.tool.task_support == "never":
        capabilities.require(
            ctx.capabilities,
            call.tool.capabilities_for(call.arguments),
            f"tool {call.tool.name!r} needs it to run",
        )


async def run_sync(
    ctx: RequestContext, call: Call, answers: dict[str, Any], log_threshold: str | None
) -> core.CallToolResult:
    """Run a synchronous tool with its MRTR answers; its log messages go out at `log_threshold`
    and above (none when None)."""
    assert call.tool.handler is not None
    tool_call = ToolCall(
        call.tool.name,
        call.arguments,
        ctx.capabilities_dict(),
        answers,
        report_progress=relay.progress_reporter(ctx),
        log=relay.log_sender(ctx, log_threshold),
    )
    return tool_result((await call.tool.handler(tool_call)).wire())


async def task_input(
    ctx: RequestContext,
    services: Services,
    call: Call,
    answers: dict[str, Any],
    keyed: dict[str, str],
    *,
    strict: bool,
    session: str = "",
) -> TaskInput:
    """The input of the task a task tool's call starts; counts the approvers it names."""
    tool = call.tool
    services.approvers.count(ctx.principal, tool, call.arguments)  # approver_policy.py
    related = await related_tasks.readable(ctx, services, call.related)  # as tasks/get finds them
    return TaskInput(
        task_id=keyed.get("task_id") or new_task_id(),
        tool=tool.name,
        arguments=call.arguments,
        created_at=iso_now(services.clock()),
        ttl_ms=tool.ttl_ms,
        poll_interval_ms=tool.poll_interval_ms,
        owner=ctx.principal,
        client_capabilities=_answerable(ctx.capabilities_dict(), strict),
        prelude_responses=answers,
        secret_arguments=sorted(tool.secret_arguments),
        tool_config=tool.workflow_config,
        session=session,
        call_digest=keyed.get("call_digest", ""),
        requested_by=ctx.identity.name,
        webhooks=services.webhooks.for_tool(tool.name),
        related_task_ids=related,
        events=services.events is not None,
    )


def _answerable(declared: dict[str, Any], strict: bool) -> dict[str, Any]:
    """The capabilities a task's workflow sees: outside a task the client must answer itself,
    questions can always be answered (through task_respond), so the task may ask them."""
    return declared if strict else {**declared, "elicitation": declared.get("elicitation", {})}


async def run_attached(
    ctx: RequestContext, services: Services, task: TaskInput, tool: Tool, attached: AttachedRuns
) -> BaseModel:
    """Start the task attached to the call: the call answers what the run answers."""
    with _named_tasks():
        return await attached.run(ctx, services, task, _workflow(tool), tool)


async def create(services: Services, task: TaskInput, tool: Tool) -> TaskSnapshot:
    """Start the task within the caller's open-task quota (its snapshot, for the era's
    CreateTaskResult)."""
    workflow = _workflow(tool)
    with _named_tasks():
        return await services.limits.within_open_task_quota(
            lambda quota: services.store.create(task, workflow, quota)
        )


def _workflow(tool: Tool) -> str:
    assert tool.workflow is not None
    return tool.workflow


@contextmanager
def _named_tasks() -> Iterator[None]:
    """An idempotency key that already names another call's task is -32602."""
    try:
        yield
    except IdempotencyConflict as err:
        raise idempotency.conflict(err) from None
