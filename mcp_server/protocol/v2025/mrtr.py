"""A tool's MRTR questions (multi round-trip requests, asked before it runs) at 2025-11-25.

That era has no InputRequiredResult: a server asks with a request on the call's response
stream and waits for the client's response. Rules:
- Each MRTR round (core/mrtr.py decides what is still needed) is sent as requests whose
  ids start with `mcp-mrtr:`, only for questions the session can take (else -32021, as at
  2026-07-28); the call waits for every answer of the round, then asks the next round.
- The answers are awaited in this process: unlike a task's questions, nothing durable waits on
  them (the tool has not started). The response must therefore reach this replica; with
  several replicas, route a session's POSTs to one replica (affinity on `Mcp-Session-Id`) for
  tools that ask MRTR questions, or use tasks. An answer that reaches another replica is logged and
  dropped, and the call here ends with an error after `ANSWER_TIMEOUT_S`.
- A client that cannot take a stream (JSON only) gets -32600 naming what to do.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import Any

from mcp_types.jsonrpc import JSONRPCRequest

from mcp_server.protocol.core import capabilities, mrtr
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.frame.errors import INVALID_REQUEST, McpError
from mcp_server.protocol.frame.models import ToolCallParams, to_message
from mcp_server.tools.registry import InputRequests, Tool

log = logging.getLogger("mcp_server.protocol.v2025.mrtr")
PREFIX = "mcp-mrtr:"
ANSWER_TIMEOUT_S = 600.0


def resolve(services: Services, request_id: object, message: dict[str, Any]) -> bool:
    """Hand a client's response to the call waiting for it here; False when it is not ours."""
    if not isinstance(request_id, str) or not request_id.startswith(PREFIX):
        return False
    result = message.get("result")
    if not services.awaited.deliver(
        request_id, result if isinstance(result, dict) else {"action": "cancel"}
    ):
        log.info("no call here waits for %s (another replica asked, or it gave up)", request_id)
    return True


async def _ask_round(
    ctx: RequestContext, services: Services, requests: InputRequests
) -> dict[str, Any]:
    awaited = services.awaited
    ids = {key: f"{PREFIX}{secrets.token_hex(16)}" for key in requests}
    for request in requests.values():
        capabilities.require(
            ctx.capabilities,
            capabilities.required_for_input(request),
            f"the tool needs to ask the client ({request.get('method')})",
        )
    waiting = {key: awaited.expect(ids[key]) for key in requests}
    try:
        for key, request in requests.items():
            message = JSONRPCRequest(
                jsonrpc="2.0",
                id=ids[key],
                method=str(request["method"]),
                params=dict(request.get("params") or {}),
            )
            await ctx.send(to_message(message))
        async with asyncio.timeout(ANSWER_TIMEOUT_S):
            return {key: await waiting[key] for key in requests}
    except TimeoutError as err:
        raise McpError(INVALID_REQUEST, "The client did not answer the tool's question") from err
    finally:
        for request_id in ids.values():
            awaited.forget(request_id)


async def gather(
    ctx: RequestContext,
    services: Services,
    tool: Tool,
    arguments: dict[str, Any],
    params: ToolCallParams,
) -> dict[str, Any]:
    """Every answer the tool needs before it runs, asked round by round on the call's stream."""
    state: str | None = None
    responses: dict[str, Any] | None = None
    while True:
        call = mrtr.Round(
            tool,
            arguments,
            ctx.capabilities_dict(),
            ctx.principal,
            request_state=state,
            input_responses=responses,
        )
        outcome = mrtr.gather(call, services.request_state, services.limits)
        if isinstance(outcome, mrtr.Gathered):
            return outcome.answers
        if not ctx.streaming:
            raise McpError(
                INVALID_REQUEST,
                f"Tool {tool.name!r} asks a question before it runs: call it with "
                "Accept: text/event-stream to receive the question",
            )
        state = outcome.request_state
        responses = await _ask_round(ctx, services, outcome.input_requests)
