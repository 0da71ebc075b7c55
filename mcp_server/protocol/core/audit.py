"""One structured JSON line per task change (create, update, cancel, steer, pause, resume), on the
`mcp_server.protocol.audit` logger: time, `requestId` (the HTTP request's `X-Request-Id`, the
same as on its request line; absent on stdio), `jsonrpcId` (the JSON-RPC id), taskId, principal
digest (logged keyed: mcp_tasks/logging.py), the caller's name (`by`, when it has one),
method, outcome; and a `task.decision` line for each delivered answer to requests that name
approvers (who decided, which keys).

The dispatch table declares which methods are audited; this module decides when a call counts
(a `tools/call` only when it names a task tool) and writes the line. No arguments, answers or
tokens are ever logged. The Temporal history keeps the same facts: the principal travels in the
`mcp.submit_input` and `mcp.cancel_requested` signal payloads.

What the client chose is bounded: a JSON-RPC id or taskId longer than `MAX_LOGGED_CHARS` is
logged as its first characters and "…", plus `<field>Sha256` (the digest of the whole value,
to match it with the client's own logs) and `<field>Truncated: true`. (The envelope already
refuses ids over 256 characters; a taskId may be any length.)
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import mcp_types as core
from pydantic import BaseModel

from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.frame.models import CreateTaskResult
from mcp_server.protocol.frame.wire import iso_now
from mcp_tasks.request_id import HTTP_REQUEST_ID

# The logger operators route the audit lines by (docs/operations/security.md): a published
# name, which stays when the module moves.
log = logging.getLogger("mcp_server.protocol.audit")
MAX_LOGGED_CHARS = 128
_EVENTS = {
    "tools/call": "task.create",
    "tasks/update": "task.update",
    "tasks/cancel": "task.cancel",
    "mcp-tasks-temporal/steer": "task.steer",
    "mcp-tasks-temporal/pause": "task.pause",
    "mcp-tasks-temporal/resume": "task.resume",
}


def applies(method: str, services: Services, params: Any) -> bool:
    """Whether this call may change a task: every tasks/* call, and a tools/call of a task tool."""
    if method != "tools/call":
        return True
    tool = services.registry.get(params.name)
    return tool is not None and tool.task_support != "never"


def created_task_id(result: BaseModel) -> str | None:
    """The taskId a tools/call result created, in either era's shape."""
    if isinstance(result, CreateTaskResult):
        return result.task_id
    if isinstance(result, core.CreateTaskResult):
        return result.task.task_id
    return None


def bounded(entry: dict[str, Any], name: str, value: Any) -> None:
    """Set `entry[name]` to `value`, or to a marked prefix of it when it is too long to log."""
    text = value if isinstance(value, str) else str(value)
    if value is None or len(text) <= MAX_LOGGED_CHARS:
        entry[name] = value
        return
    entry[name] = text[: MAX_LOGGED_CHARS // 2] + "…"
    entry[f"{name}Sha256"] = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
    entry[f"{name}Truncated"] = True


def _request_ids(entry: dict[str, Any], ctx: RequestContext) -> None:
    request_id = HTTP_REQUEST_ID.get()
    if request_id is not None:
        entry["requestId"] = request_id
    bounded(entry, "jsonrpcId", ctx.request_id)


def write(ctx: RequestContext, params: Any, outcome: str, *, task_id: str | None = None) -> None:
    entry: dict[str, Any] = {
        "time": iso_now(),
        "event": _EVENTS.get(ctx.method, "task.cancel"),
        "method": ctx.method,
    }
    _request_ids(entry, ctx)
    bounded(entry, "taskId", task_id or getattr(params, "task_id", None))
    entry["principal"] = ctx.principal
    if ctx.identity.name:
        entry["by"] = ctx.identity.name
    entry["outcome"] = outcome
    if ctx.method == "tools/call":
        entry["tool"] = params.name
    log.info(json.dumps(entry, separators=(",", ":")))


def decided(ctx: RequestContext, task_id: str, keys: list[str]) -> None:
    """A `task.decision` line: who (`by`, the caller's name) answered the requests `keys` that
    name approvers, on whichever path the answer came (tasks/update, a 2025-11-25 client's
    response, task_respond)."""
    entry: dict[str, Any] = {"time": iso_now(), "event": "task.decision", "method": ctx.method}
    _request_ids(entry, ctx)
    bounded(entry, "taskId", task_id)
    entry.update(principal=ctx.principal, by=ctx.identity.name, keys=keys, outcome="delivered")
    log.info(json.dumps(entry, separators=(",", ":")))
