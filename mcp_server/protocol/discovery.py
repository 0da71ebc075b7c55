"""`server/discover` and `tools/list` (wire §1.4, §1.7).

- `server/discover` replaces `initialize` at 2026-07-28; it advertises the tasks extension
  (and this server's steering extension, core/steering.py) under `capabilities.extensions`
  and never the 2025-11-25 `capabilities.tasks` slot.
- `tools/list` and `server/discover` carry the cache hints `ttlMs` and `cacheScope` at
  2026-07-28. The list is the same for every caller and every connection, in registration
  order, paginated by an opaque cursor (a bad cursor is -32602).
- At 2025-11-25 a task tool carries `execution.taskSupport: "optional"`: a client with task
  support may run it as a task, and a host without gets it run for it (the fallback).
"""

from __future__ import annotations

import base64
import binascii

import mcp_types as core

from mcp_server.protocol.attached import followup_tools
from mcp_server.protocol.core.client_view import STEERING_EXTENSION
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.events.models import EVENTS_EXTENSION
from mcp_server.protocol.frame.errors import invalid_params
from mcp_server.protocol.frame.models import (
    DiscoverResult,
    ListToolsResult,
    PaginatedParams,
    Params,
)
from mcp_server.protocol.frame.wire import SUPPORTED_VERSIONS, TASKS_EXTENSION, V2025, V2026, Era
from mcp_server.tools.registry import Tool

LIST_TTL_MS = 5 * 60 * 1000
TOOLS_PAGE_SIZE = 100


def server_capabilities(events: bool = False) -> core.ServerCapabilities:
    """With `events`, the events extension (SEP-3415) too, without list-change notices."""
    extensions: dict[str, dict[str, object]] = {TASKS_EXTENSION: {}, STEERING_EXTENSION: {}}
    if events:
        extensions[EVENTS_EXTENSION] = {}
    return core.ServerCapabilities(
        tools=core.ToolsCapability(list_changed=True), extensions=extensions
    )


async def discover(ctx: RequestContext, services: Services, params: Params) -> DiscoverResult:
    return DiscoverResult(
        supported_versions=list(SUPPORTED_VERSIONS),
        capabilities=server_capabilities(events=services.events is not None),
        instructions=services.instructions or None,
        ttl_ms=LIST_TTL_MS,
        cache_scope="public",
    )


def _cursor_offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        offset = int(base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii"))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise invalid_params("Invalid cursor") from exc
    if offset < 0:
        raise invalid_params("Invalid cursor")
    return offset


def tool_model(tool: Tool, era: Era) -> core.Tool:
    """The `Tool` of tools/list (2026-07-28 has no `execution` field)."""
    execution = None
    if era == V2025 and tool.task_support != "never":
        execution = core.ToolExecution(task_support="optional")
    return core.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=followup_tools.listed_output_schema(tool),
        annotations=core.ToolAnnotations.model_validate(tool.annotations)
        if tool.annotations
        else None,
        execution=execution,
    )


async def list_tools(
    ctx: RequestContext, services: Services, params: PaginatedParams
) -> ListToolsResult:
    tools = [*services.registry.tools(), *followup_tools.TOOLS]
    offset = _cursor_offset(params.cursor)
    if offset > len(tools):
        raise invalid_params("Invalid cursor")
    page = tools[offset : offset + TOOLS_PAGE_SIZE]
    next_cursor = None
    if offset + TOOLS_PAGE_SIZE < len(tools):
        next_offset = str(offset + TOOLS_PAGE_SIZE).encode("ascii")
        next_cursor = base64.urlsafe_b64encode(next_offset).decode("ascii")
    return ListToolsResult(
        tools=[tool_model(tool, ctx.era) for tool in page],
        next_cursor=next_cursor,
        ttl_ms=LIST_TTL_MS if ctx.era == V2026 else None,
        cache_scope="public" if ctx.era == V2026 else None,
    )
