"""The follow-up tools: ordinary tools that let a model continue a task in a later turn, for
hosts that know nothing of tasks (see core/relay.py).

- `task_status {taskId}`: the task's result when it is done (the tool's own result, or its
  error as an `isError` result), else its status, and the questions it waits on, each with
  the fields to answer and how to answer them.
- `task_respond {taskId, key?, action, content?}`: answers one question (the only open one
  when `key` is left out), validated as a `tasks/update` answer is.
- `task_cancel {taskId}`: asks the task to stop.
- `task_steer {taskId, message}`, `task_pause {taskId}`, `task_resume {taskId}`: steering
  (core/steering.py, the same rules and refusals as its methods), for a task whose tool
  declares it; they count as a tasks/update.
Owner binding holds as for `tasks/*`: a task that is missing, expired or someone else's is
"not found", alike, and so do the per-principal rate limits (task_respond counts as a
tasks/update, task_cancel as a tasks/cancel, task_status as a tasks/get poll, every "not
found" as one: a JSON-RPC RATE_LIMITED error, as for `tasks/*`). Mistakes a model can
correct (a wrong key, a finished task) are `isError` results that say what to do, not
protocol errors.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

import mcp_types as core

from mcp_server.protocol.core import steering, tasks
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.views import tool_result
from mcp_server.protocol.frame.errors import (
    RATE_LIMITED,
    TASK_NOT_FOUND_MESSAGE,
    McpError,
    invalid_params,
)
from mcp_server.tasks.access import find_task
from mcp_server.tasks.errors import TaskError
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tools.registry import Tool, ToolCall
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES
from workflows.steering import MAX_STEER_CHARS

_TASK_ID = {"type": "string", "minLength": 1, "description": "The taskId the tool call named"}
NOT_FOUND = "No such task: it never existed, has passed its retention, or belongs to someone else."


async def _served_by_the_protocol_layer(call: ToolCall) -> NoReturn:
    raise RuntimeError(f"{call.name} is served by mcp_server.protocol.attached.followup_tools")


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Tool:
    schema = {"type": "object", "properties": properties, "required": required}
    return Tool(name, description, schema, handler=_served_by_the_protocol_layer)


TOOLS = [
    _tool(
        "task_status",
        "Reads a long-running task started by an earlier tool call: its result when it is "
        "done, else its progress and any question it is waiting on.",
        {"taskId": _TASK_ID},
        ["taskId"],
    ),
    _tool(
        "task_respond",
        "Answers the question a long-running task is waiting on (see task_status).",
        {
            "taskId": _TASK_ID,
            "key": {"type": "string", "description": "Which question (optional if only one)"},
            "action": {"enum": ["accept", "decline", "cancel"]},
            "content": {"type": "object", "description": "The answer's fields, for accept"},
        },
        ["taskId", "action"],
    ),
    _tool(
        "task_cancel",
        "Stops a long-running task started by an earlier tool call.",
        {"taskId": _TASK_ID},
        ["taskId"],
    ),
]
# Steering, for tasks whose tool takes it (listed apart: a call's follow-up result names the
# three above, which every task takes).
STEERING_TOOLS = [
    _tool(
        "task_steer",
        "Sends a message to a long-running task that takes steering (e.g. 'skip the tests'); "
        "it reads it at its next safe point.",
        {"taskId": _TASK_ID, "message": {"type": "string", "minLength": 1, "maxLength": 4000}},
        ["taskId", "message"],
    ),
    _tool(
        "task_pause",
        "Pauses a long-running task that can be paused: it holds at its next safe point.",
        {"taskId": _TASK_ID},
        ["taskId"],
    ),
    _tool(
        "task_resume",
        "Resumes a paused long-running task.",
        {"taskId": _TASK_ID},
        ["taskId"],
    ),
]
FOLLOW_UP_TOOLS = [tool.name for tool in TOOLS]
TOOLS += STEERING_TOOLS
_NAMES = {tool.name for tool in TOOLS}

# The structured content of the result of a call whose task runs on (core/relay.py): a task tool
# that declares an outputSchema lists `anyOf` its own schema and this one, to every client, so
# that result is valid against what tools/list said and need not be marked `isError`.
FOLLOW_UP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "taskId": {"type": "string"},
        "status": {"enum": ["working", "input_required"]},
        # A string, or absent, as the tasks extension types it (a `["string", "null"]` type
        # array draws portability warnings from schema-checking clients such as the Inspector).
        "statusMessage": {"type": "string"},
        "followUpTools": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["taskId", "status", "followUpTools"],
}
# Keywords of a tool's outputSchema that stay at the root of the listed schema: the dialect,
# the base URI and the definitions its `$ref`s point into (`#/$defs/...`).
_ROOT_KEYWORDS = ("$schema", "$id", "$defs", "definitions")


def listed_output_schema(tool: Tool) -> dict[str, Any] | None:
    """The outputSchema tools/list declares for `tool`. A task tool may end a call with the
    follow-up result instead of its own, so its schema admits that shape too. The same list
    goes to every client: at 2026-07-28 tools/list must not vary with the connection, and a
    task-aware client's results (the tool's own) still match."""
    if tool.output_schema is None or tool.task_support == "never":
        return tool.output_schema
    own = dict(tool.output_schema)
    root = {key: own.pop(key) for key in _ROOT_KEYWORDS if key in own}
    return {**root, "type": "object", "anyOf": [own, FOLLOW_UP_SCHEMA]}


def is_followup(name: str) -> bool:
    return name in _NAMES


def _text(text: str, *, error: bool = False, **structured: Any) -> core.CallToolResult:
    return core.CallToolResult(
        content=[core.TextContent(type="text", text=text)],
        structured_content=structured or None,
        is_error=error,
    )


def _question(key: str, request: dict[str, Any]) -> str:
    params = request.get("params") or {}
    schema = params.get("requestedSchema") or {}
    fields = json.dumps(schema.get("properties") or {}, ensure_ascii=False)
    return f'- key "{key}": {params.get("message", "")} (fields: {fields})'


def _status(snapshot: TaskSnapshot) -> core.CallToolResult:
    if snapshot.status == "completed" and snapshot.result is not None:
        return tool_result(snapshot.result)
    if snapshot.status == "failed":
        message = snapshot.error.message if snapshot.error else snapshot.status_message
        return _text(f"Task {snapshot.task_id} failed: {message}", error=True, status="failed")
    text = f"Task {snapshot.task_id} is {snapshot.status}: {snapshot.status_message or ''}"
    if snapshot.status == "input_required":
        questions = "\n".join(_question(k, r) for k, r in snapshot.input_requests.items())
        text += (
            f"\nIt waits for an answer:\n{questions}\nAnswer with task_respond "
            f'{{"taskId": "{snapshot.task_id}", "key": ..., "action": "accept", '
            '"content": {...}} (or "action": "decline").'
        )
    return _text(
        text,
        taskId=snapshot.task_id,
        status=snapshot.status,
        statusMessage=snapshot.status_message,
    )


async def call(
    ctx: RequestContext, services: Services, name: str, arguments: dict[str, Any]
) -> core.CallToolResult:
    task_id = arguments.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise invalid_params(f"Invalid arguments for tool {name!r}: taskId must be a string")
    rates = services.limits.rates
    if name in _STEERING:
        return await _steering(ctx, services, name, task_id, arguments)
    if name == "task_respond":
        rates.updates.take(ctx.principal)
    elif name == "task_cancel":
        rates.cancels.take(ctx.principal)
    else:  # task_status polls, as tasks/get does
        services.limits.polls.check(ctx.principal, task_id)
    try:
        snapshot = await find_task(
            services.store, task_id, ctx.principal, services.clock, rates.misses, ctx.identity
        )
        if snapshot is None:
            return _text(NOT_FOUND, error=True)
        if name == "task_status":
            services.limits.polls.learn_interval(
                ctx.principal, snapshot.task_id, snapshot.poll_interval_ms
            )
            return _status(snapshot)
        if name == "task_cancel":
            if snapshot.status in TERMINAL_STATUSES:  # nothing to cancel; say how it ended
                return _text(
                    f"Task {task_id} had already ended ({snapshot.status}): nothing to cancel.",
                    taskId=task_id,
                    status=snapshot.status,
                )
            try:
                await tasks.cancel(ctx, services, snapshot)
            except McpError as err:
                return _text(f"The task was not cancelled: {err.message}", error=True)
            return _text(f"Cancellation of task {task_id} requested.", taskId=task_id)
        return await _respond(ctx, services, snapshot, arguments)
    except TaskError as err:
        return _text(f"The task could not be reached: {err}", error=True)


_STEERING = {tool.name for tool in STEERING_TOOLS}


async def _steering(
    ctx: RequestContext, services: Services, name: str, task_id: str, arguments: dict[str, Any]
) -> core.CallToolResult:
    """task_steer, task_pause, task_resume: a refusal is an `isError` result saying why."""
    try:
        if name == "task_steer":
            message = arguments.get("message")
            if not isinstance(message, str) or not message:
                return _text(
                    "Say what to tell the task: message is a non-empty string.", error=True
                )
            await steering.steer(ctx, services, task_id, message[:MAX_STEER_CHARS])
            return _text(f"Message queued for task {task_id}.", taskId=task_id)
        if name == "task_pause":
            await steering.pause(ctx, services, task_id)
            return _text(f"Task {task_id} pauses at its next safe point.", taskId=task_id)
        await steering.resume(ctx, services, task_id)
        return _text(f"Task {task_id} resumes.", taskId=task_id)
    except McpError as err:
        if err.code == RATE_LIMITED:
            raise  # a JSON-RPC error, as for every follow-up tool
        if err.message == TASK_NOT_FOUND_MESSAGE:
            return _text(NOT_FOUND, error=True)
        return _text(f"Not done: {err.message}", error=True, code=err.code)
    except TaskError as err:
        return _text(f"The task could not be reached: {err}", error=True)


async def _respond(
    ctx: RequestContext, services: Services, snapshot: TaskSnapshot, arguments: dict[str, Any]
) -> core.CallToolResult:
    open_keys = list(snapshot.input_requests)
    if snapshot.status != "input_required" or not open_keys:
        return _text(f"Task {snapshot.task_id} is not waiting for an answer.", error=True)
    key = arguments.get("key") or (open_keys[0] if len(open_keys) == 1 else None)
    if key not in snapshot.input_requests:
        return _text(f"Say which question you answer: key is one of {open_keys}.", error=True)
    answer: dict[str, Any] = {"action": arguments.get("action")}
    if arguments.get("content") is not None:
        answer["content"] = arguments["content"]
    try:
        await tasks.submit_answers(ctx, services, snapshot, {key: answer})
    except McpError as err:
        return _text(f"The answer was not accepted: {err.message}", error=True)
    return _text(f"Answer to {key!r} delivered to task {snapshot.task_id}.", key=key)
