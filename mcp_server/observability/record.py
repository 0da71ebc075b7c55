"""What the transport tells the request middleware about one MCP request: its JSON-RPC method,
the task it named or created, and its outcome. The middleware (http/middleware.py,
`ObservabilityMiddleware`) turns that into one log line and the request metrics.

The transport only fills fields of an object the middleware left in the ASGI scope, so a
request costs a few attribute writes; without the middleware (stdio, tests of the app alone)
`note` does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

SCOPE_KEY = "mcp_observed"
_MAX_LOGGED = 64  # a taskId or method a client sent is logged, cut to this


@dataclass
class RequestRecord:
    method: str | None = None
    task_id: str | None = None
    outcome: str | None = None  # "ok", or a JSON-RPC error code as a string
    created_task: bool = False
    jsonrpc_id: str | int | None = None  # the message's id, cut to _MAX_LOGGED characters
    # The request span's ids (hex), while tracing is on (tracing.annotate).
    trace_id: str | None = None
    span_id: str | None = None


def record_of(request: Request) -> RequestRecord | None:
    state: dict[str, Any] = request.scope.get("state") or {}
    record = state.get(SCOPE_KEY)
    return record if isinstance(record, RequestRecord) else None


def note_message(request: Request, message: dict[str, Any]) -> None:
    """The parsed message: its method, and the taskId its params name (for the log line)."""
    record = record_of(request)
    if record is None:
        return
    method = message.get("method")
    record.method = method[:_MAX_LOGGED] if isinstance(method, str) else None
    jsonrpc_id = message.get("id")
    if isinstance(jsonrpc_id, str):
        record.jsonrpc_id = jsonrpc_id[:_MAX_LOGGED]
    elif isinstance(jsonrpc_id, int) and not isinstance(jsonrpc_id, bool):
        record.jsonrpc_id = jsonrpc_id
    params = message.get("params")
    task_id = params.get("taskId") if isinstance(params, dict) else None
    if isinstance(task_id, str):
        record.task_id = task_id[:_MAX_LOGGED]


def note_error(request: Request, code: int) -> None:
    record = record_of(request)
    if record is not None:
        record.outcome = str(code)


def note_created(request: Request, task_id: str | None) -> None:
    record = record_of(request)
    if record is not None and task_id is not None:
        record.task_id = task_id
        record.created_task = True
