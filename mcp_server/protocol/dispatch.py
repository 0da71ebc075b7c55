"""The one dispatch table: every method of both eras, plain or streaming, and what each needs.

Each entry declares:
- the eras that serve it (`V2026`: 2026-07-28, stateless; `V2025`: 2025-11-25 and older,
  after `initialize`). A method not served in the request's era is -32601 (HTTP 404): at
  2026-07-28 that covers `initialize`, `ping`, `logging/setLevel`, `tasks/list`,
  `tasks/result`; at 2025-11-25, `server/discover`, `tasks/update`, `subscriptions/listen`;
- its params model: params are parsed before the handler runs (-32602 naming the field);
- the extension it belongs to: at 2026-07-28 the request must declare it (-32021), checked
  before the handler looks anything up (the steering methods need the tasks extension too);
- the param routed in `Mcp-Name` (checked against the header by the HTTP transport);
- the audit event it may write (task.create, task.update, task.cancel), with the outcome;
- whether its result is a stream of messages (`subscriptions/listen`) rather than one result.
The transport turns the handler's model into the JSON-RPC result and stamps `serverInfo`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from mcp_server.protocol import discovery, tools
from mcp_server.protocol.core import audit, capabilities
from mcp_server.protocol.core.client_view import STEERING_EXTENSION
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.events import handlers as events
from mcp_server.protocol.events.models import (
    RemoveSubscriptionParams,
    SubscribeParams,
    UnsubscribeParams,
)
from mcp_server.protocol.frame.errors import METHOD_NOT_FOUND, McpError, from_task_error
from mcp_server.protocol.frame.models import (
    ListenParams,
    PaginatedParams,
    Params,
    SteerTaskParams,
    TaskIdParams,
    ToolCallParams,
    UpdateTaskParams,
    parse_params,
)
from mcp_server.protocol.frame.wire import TASKS_CAPABILITY, TASKS_EXTENSION, V2025, V2026, Era
from mcp_server.protocol.v2025 import methods as v2025
from mcp_server.protocol.v2026 import steering, subscriptions, tasks
from mcp_server.tasks.errors import TaskError

BOTH: frozenset[Era] = frozenset({V2026, V2025})
IN_2026: frozenset[Era] = frozenset({V2026})
IN_2025: frozenset[Era] = frozenset({V2025})

Handler = Callable[[RequestContext, Services, Any], Awaitable[BaseModel]]
StreamHandler = Callable[[RequestContext, Services, Any], Awaitable[AsyncIterator[Any]]]


@dataclass(frozen=True)
class Method:
    name: str
    params: type[Params]
    handler: Handler | None = None
    stream: StreamHandler | None = None
    eras: frozenset[Era] = BOTH
    extension: str | None = None
    name_param: str | None = None
    audit_event: str | None = None


def _method(name: str, params: type[Params], handler: Any, **spec: Any) -> Method:
    return Method(name, params, handler, **spec)


# The 2025-11-25 era's handshake methods, served beside the shared ones.
_HANDSHAKE = [
    Method("initialize", v2025.InitializeParams, v2025.initialize, eras=IN_2025),
    Method("ping", Params, v2025.empty, eras=IN_2025),
    Method("logging/setLevel", v2025.SetLevelParams, v2025.empty, eras=IN_2025),
]
# The 2025-11-25 era's own tasks methods (not the extension's).
_TASKS_2025 = [
    Method("tasks/get", TaskIdParams, v2025.get_task, eras=IN_2025, name_param="taskId"),
    Method("tasks/result", TaskIdParams, v2025.task_result, eras=IN_2025, name_param="taskId"),
    Method("tasks/list", PaginatedParams, v2025.list_tasks, eras=IN_2025),
    Method(
        "tasks/cancel",
        TaskIdParams,
        v2025.cancel_task,
        eras=IN_2025,
        name_param="taskId",
        audit_event="tasks/cancel",
    ),
]
# This server's own steering extension (v2026/steering.py).
_STEERING: list[tuple[str, type[Params], Any]] = [
    (steering.STEER_METHOD, SteerTaskParams, steering.steer_task),
    (steering.PAUSE_METHOD, TaskIdParams, steering.pause_task),
    (steering.RESUME_METHOD, TaskIdParams, steering.resume_task),
]
TABLE: dict[str, Method] = {
    m.name: m
    for m in [
        _method("server/discover", Params, discovery.discover, eras=IN_2026),
        _method("tools/list", PaginatedParams, discovery.list_tools),
        _method(
            "tools/call",
            ToolCallParams,
            tools.call_tool,
            name_param="name",
            audit_event="tools/call",
        ),
        _method(
            "tasks/get",
            TaskIdParams,
            tasks.get_task,
            eras=IN_2026,
            extension=TASKS_EXTENSION,
            name_param="taskId",
        ),
        _method(
            "tasks/update",
            UpdateTaskParams,
            tasks.update_task,
            eras=IN_2026,
            extension=TASKS_EXTENSION,
            name_param="taskId",
            audit_event="tasks/update",
        ),
        _method(
            "tasks/cancel",
            TaskIdParams,
            tasks.cancel_task,
            eras=IN_2026,
            extension=TASKS_EXTENSION,
            name_param="taskId",
            audit_event="tasks/cancel",
        ),
        *[
            _method(
                name,
                params,
                handler,
                eras=IN_2026,
                extension=STEERING_EXTENSION,
                name_param="taskId",
                audit_event=name,
            )
            for name, params, handler in _STEERING
        ],
        _method("events/list", PaginatedParams, events.list_events, eras=IN_2026),
        _method("events/subscribe", SubscribeParams, events.subscribe, eras=IN_2026),
        _method("events/unsubscribe", UnsubscribeParams, events.unsubscribe, eras=IN_2026),
        _method(
            "events/subscriptions/list",
            PaginatedParams,
            events.list_subscriptions,
            eras=IN_2026,
        ),
        _method(
            "events/subscriptions/remove",
            RemoveSubscriptionParams,
            events.remove_subscription,
            eras=IN_2026,
        ),
        Method(
            "subscriptions/listen",
            ListenParams,
            stream=subscriptions.listen,
            eras=IN_2026,
        ),
        *_HANDSHAKE,
    ]
}
# The 2025-11-25 era's own tasks methods share names with the extension's: its table wins there.
TABLE_2025: dict[str, Method] = {**TABLE, **{m.name: m for m in _TASKS_2025}}


def lookup(method: str, era: Era) -> Method:
    """The entry serving `method` in `era`, or -32601."""
    entry = (TABLE_2025 if era == V2025 else TABLE).get(method)
    if entry is None or era not in entry.eras:
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
    return entry


def _gate(entry: Method, ctx: RequestContext) -> None:
    if entry.extension is None or ctx.era != V2026:
        return
    if entry.extension == TASKS_EXTENSION:
        capabilities.require(
            ctx.capabilities, TASKS_CAPABILITY, f"{entry.name} belongs to the tasks extension"
        )
        return
    # An extension over tasks (steering): both must be declared.
    required: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}, entry.extension: {}}}
    capabilities.require(
        ctx.capabilities, required, f"{entry.name} belongs to the {entry.extension} extension"
    )


async def call(
    entry: Method, ctx: RequestContext, services: Services, params: dict[str, Any]
) -> BaseModel:
    """Run a plain method: gate, parse, handle, audit. Task-layer errors become JSON-RPC."""
    _gate(entry, ctx)
    parsed = parse_params(entry.params, params)
    assert entry.handler is not None
    audited = entry.audit_event is not None and audit.applies(entry.name, services, parsed)
    try:
        result = await entry.handler(ctx, services, parsed)
    except TaskError as err:
        error = from_task_error(err)
        if audited:
            audit.write(ctx, parsed, f"error {error.code}")
        raise error from err
    except McpError as error:
        if audited:
            audit.write(ctx, parsed, f"error {error.code}")
        raise
    if audited:
        created = audit.created_task_id(result)
        if entry.name != "tools/call":
            audit.write(ctx, parsed, "acked")
        elif created is not None:
            audit.write(ctx, parsed, "created", task_id=created)
    return result


async def open_stream(
    entry: Method, ctx: RequestContext, services: Services, params: dict[str, Any]
) -> AsyncIterator[Any]:
    """Validate a streaming method (errors are ordinary JSON-RPC errors, before any stream)."""
    _gate(entry, ctx)
    parsed = parse_params(entry.params, params)
    assert entry.stream is not None
    try:
        return await entry.stream(ctx, services, parsed)
    except TaskError as err:
        raise from_task_error(err) from err
