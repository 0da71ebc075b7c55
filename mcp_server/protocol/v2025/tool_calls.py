"""`tools/call` at 2025-11-25 (and the handshake versions before it).

What both eras share is core/tool_calls.py's; at 2025-11-25:
- A task when the request carries `task` (the revision's own task support); its session is
  recorded, so that the session's GET stream relays its questions (session_stream.py).
- MRTR: the era has no InputRequiredResult, so a tool's questions are asked as requests on the
  call's stream (v2025/mrtr.py).
- Otherwise a task tool runs attached to the call (attached/): the caller waits, sees progress
  and, on its stream, the task's questions it can take.
- A synchronous tool's log messages (`notifications/message`) go out on the call's stream at
  every level, since `logging/setLevel` would be session state that this stateless server does
  not keep.
"""

from __future__ import annotations

from pydantic import BaseModel

from mcp_server.protocol.core import relay, tool_calls
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.tool_calls import AttachedRuns
from mcp_server.protocol.frame.models import ToolCallParams
from mcp_server.protocol.v2025 import mrtr
from mcp_server.protocol.v2025.views import create_task_result


async def call_tool(
    ctx: RequestContext, services: Services, params: ToolCallParams, attached: AttachedRuns
) -> BaseModel:
    call = tool_calls.prepare(ctx, services, params)
    tool = call.tool
    keyed = tool_calls.admit(ctx, services, call)
    as_task = bool(params.task)
    tool_calls.require_capabilities(ctx, call, strict=False)
    answers = await mrtr.gather(ctx, services, tool, call.arguments, params)
    if tool.task_support == "never":
        return await tool_calls.run_sync(ctx, call, answers, relay.LOG_LEVELS[0])
    session = (ctx.session or "") if as_task else ""
    task = await tool_calls.task_input(
        ctx, services, call, answers, keyed, strict=False, session=session
    )
    if not as_task:
        return await tool_calls.run_attached(ctx, services, task, tool, attached)
    return create_task_result(await tool_calls.create(services, task, tool))
