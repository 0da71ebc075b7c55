"""`tools/call` of both eras: the server's own follow-up tools (`task_status`, `task_respond`,
`task_cancel`, ..., attached/followup_tools.py), else the entry of the request's era
(v2026/tool_calls.py, v2025/tool_calls.py, over core/tool_calls.py). A task tool that a host
without task support calls runs attached to the call (attached/rounds.py), which is handed to
the era's entry from here: the eras and `attached/` do not import one another."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import BaseModel

from mcp_server.protocol.attached import followup_tools, rounds
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.tool_calls import AttachedRuns
from mcp_server.protocol.frame.models import ToolCallParams
from mcp_server.protocol.frame.wire import V2025, V2026, Era
from mcp_server.protocol.v2025 import tool_calls as tool_calls_2025
from mcp_server.protocol.v2026 import tool_calls as tool_calls_2026

Entry = Callable[[RequestContext, Services, ToolCallParams, AttachedRuns], Awaitable[BaseModel]]
ENTRIES: dict[Era, Entry] = {V2026: tool_calls_2026.call_tool, V2025: tool_calls_2025.call_tool}


async def call_tool(ctx: RequestContext, services: Services, params: ToolCallParams) -> BaseModel:
    if followup_tools.is_followup(params.name):
        return await followup_tools.call(ctx, services, params.name, dict(params.arguments or {}))
    return await ENTRIES[ctx.era](ctx, services, params, rounds)
