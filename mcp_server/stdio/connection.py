"""One MCP host on stdin/stdout: both protocol eras, the same handlers as Streamable HTTP.

Rules implemented (wire §1.1, §1.8 stdio; the 2025-11-25 lifecycle and cancellation):
- A message whose `params._meta` names a protocolVersion is served as 2026-07-28: unknown
  method -32601, params an object -32602, `_meta` -32602, version supported -32022. There are
  no headers to check (headers.py).
- `initialize` opens the handshake era for this connection: the negotiated version and the
  client's capabilities are kept in memory (one process serves one host). Later messages
  without `_meta` are served in that era. Before it, they are served as 2026-07-28, so a client
  that forgot `_meta` gets the errors it can probe with.
- Requests run concurrently: a long `tools/call` never holds up a `tasks/get`. Messages related
  to a request (progress, a task's `elicitation/create` at 2025-11-25) are written as they
  come, before its response. A request id still in flight may not be reused: -32600.
- `notifications/cancelled {requestId}` stops that request (a `subscriptions/listen` too), and
  no response is sent for it. A task is never stopped by it: only `tasks/cancel` does that.
- A response from the client (to an `elicitation/create` the server sent) is delivered to the
  task it answers exactly as on HTTP (protocol/v2025/client_responses.py).
- Every request's principal is the local user: the anonymous principal of `--auth none`.
- When stdin ends, the requests still running are stopped (their tasks keep running) and the
  answers being delivered get a few seconds to reach Temporal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as core
from pydantic import BaseModel

from mcp_server.protocol import dispatch
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.frame.envelope import (
    names_protocol_version,
    params_of,
    parse_envelope,
    require_supported_version,
)
from mcp_server.protocol.frame.errors import INTERNAL_ERROR, INVALID_REQUEST, McpError
from mcp_server.protocol.frame.models import (
    error_message,
    parse_params,
    request_meta,
    result_message,
    to_message,
)
from mcp_server.protocol.frame.wire import V2025, V2026
from mcp_server.protocol.v2025 import client_responses
from mcp_server.protocol.v2025.methods import InitializeParams, negotiate
from mcp_server.protocol.v2025.request_context import context_2025
from mcp_server.protocol.v2026.request_context import context_2026
from mcp_server.stdio.headers import BodyHeaders, body_headers
from mcp_tasks.identity import LOCAL_USER

log = logging.getLogger("mcp_server.stdio")

RequestId = str | int
Send = Callable[[dict[str, Any]], Awaitable[None]]
# How long answers already received may take to reach their tasks once stdin has ended.
ANSWER_GRACE_S = 5.0


@dataclass(frozen=True)
class Handshake:
    """What `initialize` negotiated for this connection (2025-11-25 and older)."""

    version: str
    capabilities: core.ClientCapabilities


def _error(error: McpError, request_id: RequestId | None) -> dict[str, Any]:
    return to_message(error_message(error, request_id))


def _string_or_integer(value: object) -> RequestId | None:
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


class StdioConnection:
    def __init__(self, services: Services, send: Send, principal: str) -> None:
        self.services = services
        self.send = send
        self.principal = principal
        self.handshake: Handshake | None = None
        self._in_flight: dict[RequestId, asyncio.Task[None]] = {}
        self._answers: set[asyncio.Task[None]] = set()

    async def receive(self, line: bytes | None) -> None:
        """Take one line from stdin; a request is started, never awaited here."""
        if line is None:
            await self.send(_error(McpError(INVALID_REQUEST, "Message too large"), None))
            return
        try:
            message, request_id = parse_envelope(line)
        except McpError as error:
            await self.send(_error(error, None))
            return
        method = message.get("method")
        if method is None:
            self._deliver_answer(message, request_id)
        elif request_id is None:
            self._notification(method, message)
        elif request_id in self._in_flight:
            reused = McpError(INVALID_REQUEST, f"Request id {request_id!r} is already in flight")
            await self.send(_error(reused, request_id))
        elif method == "initialize" and not names_protocol_version(message):
            # Served in line: what follows it is read in the era it opens.
            reply = await self._reply(self._initialize(message, request_id), request_id)
            if reply is not None:
                await self.send(reply)
        else:
            job = asyncio.create_task(self._serve(message, method, request_id))
            self._in_flight[request_id] = job

    async def close(self) -> None:
        jobs = list(self._in_flight.values())
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        if self._answers:
            await asyncio.wait(self._answers, timeout=ANSWER_GRACE_S)

    # ----- requests ---------------------------------------------------------------------------

    async def _serve(self, message: dict[str, Any], method: str, request_id: RequestId) -> None:
        try:
            reply = await self._reply(self._answer(message, method, request_id), request_id)
        finally:
            self._in_flight.pop(request_id, None)
        if reply is not None:
            await self.send(reply)

    async def _reply(
        self, answer: Awaitable[dict[str, Any] | None], request_id: RequestId
    ) -> dict[str, Any] | None:
        try:
            return await answer
        except McpError as error:
            return _error(error, request_id)
        except Exception:
            log.exception("unhandled error serving request %r", request_id)
            return _error(McpError(INTERNAL_ERROR, "Internal error"), request_id)

    async def _answer(
        self, message: dict[str, Any], method: str, request_id: RequestId
    ) -> dict[str, Any] | None:
        in_2026 = names_protocol_version(message) or self.handshake is None
        entry = dispatch.lookup(method, V2026 if in_2026 else V2025)
        params = params_of(message)
        ctx = (
            self._context_2026(method, request_id, params)
            if in_2026
            else self._context_2025(method, request_id, params)
        )
        if entry.stream is not None:
            stream = await dispatch.open_stream(entry, ctx, self.services, params)
            async for item in stream:  # its last message is the response
                if item is not None:  # None asks HTTP for a keep-alive: nothing to do here
                    await self.send(to_message(item))
            return None
        result = await dispatch.call(entry, ctx, self.services, params)
        return self._response(result, request_id, stamp=in_2026)

    def _context_2026(
        self, method: str, request_id: RequestId, params: dict[str, Any]
    ) -> RequestContext:
        meta = request_meta(params)
        require_supported_version(meta.protocol_version)
        headers = body_headers(self.services.registry, method, params)
        ctx = context_2026(
            request_id, method, self.principal, headers, meta=meta, identity=LOCAL_USER
        )
        return ctx.streaming_to(self.send)

    def _context_2025(
        self, method: str, request_id: RequestId, params: dict[str, Any]
    ) -> RequestContext:
        assert self.handshake is not None
        ctx = context_2025(
            request_id,
            method,
            self.principal,
            body_headers(self.services.registry, method, params),
            version=self.handshake.version,
            capabilities=self.handshake.capabilities,
            params=params,
            identity=LOCAL_USER,
        )
        return ctx.streaming_to(self.send)

    async def _initialize(self, message: dict[str, Any], request_id: RequestId) -> dict[str, Any]:
        params = params_of(message)
        parsed = parse_params(InitializeParams, params)
        version = negotiate(parsed.protocol_version)
        ctx = context_2025(
            request_id,
            "initialize",
            self.principal,
            BodyHeaders(),
            version=version,
            capabilities=parsed.capabilities,
        )
        entry = dispatch.lookup("initialize", V2025)
        result = await dispatch.call(entry, ctx, self.services, params)
        self.handshake = Handshake(version, parsed.capabilities)
        return self._response(result, request_id, stamp=False)

    def _response(self, result: BaseModel, request_id: RequestId, *, stamp: bool) -> dict[str, Any]:
        info = self.services.server_info if stamp else None
        return result_message(result, request_id, info)

    # ----- notifications and the client's responses -------------------------------------------

    def _notification(self, method: str, message: dict[str, Any]) -> None:
        if method != "notifications/cancelled":
            return  # notifications/initialized, roots/list_changed...: nothing to do
        params = message.get("params")
        if not isinstance(params, dict):
            return
        target = _string_or_integer(params.get("requestId"))
        job = self._in_flight.get(target) if target is not None else None
        if job is not None:
            log.info("request %r cancelled by the client: %s", target, params.get("reason"))
            job.cancel()  # the request only: a task it created keeps running

    def _deliver_answer(self, message: dict[str, Any], request_id: RequestId | None) -> None:
        if self.handshake is None:
            log.info("ignored a response to %r: no request was sent before initialize", request_id)
            return
        job = asyncio.create_task(self._route_answer(message, request_id, self.handshake))
        self._answers.add(job)
        job.add_done_callback(self._answers.discard)

    async def _route_answer(
        self, message: dict[str, Any], request_id: RequestId | None, handshake: Handshake
    ) -> None:
        """A response has no reply over stdio: a refusal (rate limited, task not found) is
        logged."""
        refusal = await client_responses.route(
            self.services,
            message,
            request_id,
            principal=self.principal,
            identity=LOCAL_USER,
            capabilities=handshake.capabilities,
            version=handshake.version,
            headers=BodyHeaders(),
        )
        if refusal is not None:
            log.info("answer to %s not delivered: %s", request_id, refusal.message)
