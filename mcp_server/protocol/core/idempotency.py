"""The idempotency key of a `tools/call` that creates a task (tasks/idempotency.py).

Rules implemented:
- The key comes from the `Idempotency-Key` HTTP header or from `params._meta` under
  `META_IDEMPOTENCY_KEY` (the only way on stdio, which has no headers), in either era. Both
  may be sent when they agree.
- A key is 1 to 200 printable ASCII characters; anything else, a header sent twice, a `_meta`
  value that is not a string, or a header and a `_meta` entry that differ: -32602 naming it.
- A retry with the key, by the same principal, of the same tool with the same arguments gets
  the task the first call created, as it is now; another tool or other arguments: -32602.
"""

from __future__ import annotations

from typing import Any

from mcp_server.protocol.core.context import RequestContext
from mcp_server.protocol.frame.errors import McpError, invalid_params
from mcp_server.protocol.frame.models import ToolCallParams
from mcp_server.tasks.idempotency import (
    IdempotencyConflict,
    call_digest,
    key_problem,
    keyed_task_id,
)

HEADER = "Idempotency-Key"
# This project's `_meta` prefix is its name (pyproject.toml).
META_IDEMPOTENCY_KEY = "mcp-tasks-temporal/idempotencyKey"


def requested_key(ctx: RequestContext, params: ToolCallParams) -> str | None:
    """The call's idempotency key, or None when it carries none."""
    headers = ctx.headers.getlist(HEADER)
    if len(headers) > 1:
        raise invalid_params(f"the {HEADER} header was sent {len(headers)} times; send it once")
    meta = (params.meta or {}).get(META_IDEMPOTENCY_KEY)
    if meta is not None and not isinstance(meta, str):
        raise invalid_params(f"params._meta[{META_IDEMPOTENCY_KEY!r}] must be a string")
    header = headers[0].strip(" \t") if headers else None
    if header is not None and meta is not None and header != meta:
        raise invalid_params(
            f"the {HEADER} header and params._meta[{META_IDEMPOTENCY_KEY!r}] differ; send one key"
        )
    key = header if header is not None else meta
    if key is None:
        return None
    problem = key_problem(key)
    if problem is not None:
        raise invalid_params(f"Invalid {HEADER}: it {problem}")
    return key


def keyed_call(
    ctx: RequestContext, params: ToolCallParams, tool: str, arguments: dict[str, Any]
) -> dict[str, str]:
    """The TaskInput fields of a keyed call ({} without a key): its taskId and call digest."""
    key = requested_key(ctx, params)
    if key is None:
        return {}
    return {
        "task_id": keyed_task_id(ctx.principal, key),
        "call_digest": call_digest(ctx.principal, key, tool, arguments),
    }


def conflict(err: IdempotencyConflict) -> McpError:
    return invalid_params(str(err), {"taskId": err.task_id})
