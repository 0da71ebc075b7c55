"""Method dispatch for the 2026-07-28 server: discovery, tools and the tasks extension.

- `server/discover` replaces `initialize`; it advertises the tasks extension under
  `capabilities.extensions` and never the legacy `capabilities.tasks` slot.
- `tools/list` and `server/discover` carry the cache hints `ttlMs` and `cacheScope`.
- Removed methods (`initialize`, `ping`, `logging/setLevel`, ...), `tasks/list`, `tasks/result`
  and any other unknown method are -32601 (HTTP 404).
- `subscriptions/listen` streams (see subscriptions.py); it is dispatched by the transport.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_server.protocol.context import RequestContext, Services
from mcp_server.protocol.errors import invalid_params
from mcp_server.protocol.tasks import cancel_task, get_task, update_task
from mcp_server.protocol.tools import call_tool
from mcp_server.protocol.wire import SUPPORTED_VERSIONS, TASKS_EXTENSION

LIST_TTL_MS = 5 * 60 * 1000
TOOLS_PAGE_SIZE = 100

Handler = Callable[[RequestContext, Services], Awaitable[dict[str, Any]]]


async def discover(ctx: RequestContext, services: Services) -> dict[str, Any]:
    result: dict[str, Any] = {
        "resultType": "complete",
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": {
            "tools": {"listChanged": True},
            "extensions": {TASKS_EXTENSION: {}},
        },
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "public",
    }
    if services.instructions:
        result["instructions"] = services.instructions
    return result


def _cursor_offset(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        offset = int(base64.urlsafe_b64decode(str(cursor).encode("ascii")).decode("ascii"))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise invalid_params("Invalid cursor") from exc
    if offset < 0:
        raise invalid_params("Invalid cursor")
    return offset


async def list_tools(ctx: RequestContext, services: Services) -> dict[str, Any]:
    tools = services.registry.tools()
    offset = _cursor_offset(ctx.params.get("cursor"))
    if offset > len(tools):
        raise invalid_params("Invalid cursor")
    page = tools[offset : offset + TOOLS_PAGE_SIZE]
    result: dict[str, Any] = {
        "resultType": "complete",
        "tools": [tool.wire() for tool in page],
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "public",
    }
    if offset + TOOLS_PAGE_SIZE < len(tools):
        next_offset = str(offset + TOOLS_PAGE_SIZE).encode("ascii")
        result["nextCursor"] = base64.urlsafe_b64encode(next_offset).decode("ascii")
    return result


METHODS: dict[str, Handler] = {
    "server/discover": discover,
    "tools/list": list_tools,
    "tools/call": call_tool,
    "tasks/get": get_task,
    "tasks/update": update_task,
    "tasks/cancel": cancel_task,
}
