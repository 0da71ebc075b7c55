"""Streamable HTTP: one endpoint, both protocol eras, one JSON-RPC message per POST (wire §1.8).

What every route needs (Host/Origin, authentication, body size, request id) is middleware.
Here, for a POST:
 1. Content-Type must be JSON: 415. JSON parse: -32700. Envelope (object, jsonrpc "2.0", id
    string|integer, no batches): -32600.
 2. The era. A request whose `params._meta` names a protocolVersion is 2026-07-28 (even an
    `initialize`, which is then an unknown method). `initialize`, a request with
    `Mcp-Session-Id`, or one whose MCP-Protocol-Version is a handshake version, is the
    handshake era (2025-11-25 and older). Anything else is 2026-07-28, so a client that forgot
    `_meta` gets the 2026-07-28 errors it can probe with.
 3. 2026-07-28 (stateless; `Mcp-Session-Id` ignored, none minted): notifications are checked
    for Mcp-Method then 202; unknown method -32601/404 before anything else; Mcp-Method
    -32020; params an object -32602; `_meta` -32602/400; MCP-Protocol-Version equal to `_meta`
    -32020; version supported -32022; Mcp-Name -32020 (a missing one tolerated on tasks/*).
 4. Handshake era: handshake.py.
 5. The answer: JSON, or server-sent events (exchange.py, sse.py).
A GET is the handshake era's session stream; any other method is 405 (a signed session holds
nothing to end, so there is no DELETE: the spec lets a server refuse it with 405).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mcp_server.http import media_type
from mcp_server.http.exchange import Exchange, RequestId, error_response
from mcp_server.http.handshake import SESSION_HEADER, Handshake
from mcp_server.http.sessions import SessionIds
from mcp_server.observability import record as observed
from mcp_server.observability import tracing
from mcp_server.protocol import dispatch
from mcp_server.protocol.core.context import Services
from mcp_server.protocol.core.grants import InsufficientScope
from mcp_server.protocol.frame import routing_headers as headers
from mcp_server.protocol.frame.envelope import (
    names_protocol_version,
    params_of,
    parse_envelope,
    require_supported_version,
)
from mcp_server.protocol.frame.errors import INTERNAL_ERROR, INVALID_REQUEST, McpError
from mcp_server.protocol.frame.models import request_meta
from mcp_server.protocol.frame.wire import HANDSHAKE_VERSIONS, V2026
from mcp_server.protocol.v2026.request_context import context_2026

log = logging.getLogger("mcp_server.http.endpoint")

_NOT_ALLOWED = McpError(
    INVALID_REQUEST,
    "This endpoint takes POST (and GET for a 2025-11-25 session's stream); sessions "
    "are not terminated: they hold no state",
    http_status=405,
    headers={"Allow": "POST"},
)


class McpRoute:
    """The ASGI app of `/mcp`: the app's `McpEndpoint` (built with its services in the
    lifespan) by the HTTP method."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        endpoint: McpEndpoint = request.app.state.endpoint
        method = scope["method"]
        if method == "POST":
            response = await endpoint.post(request)
        elif method in ("GET", "HEAD"):
            response = await endpoint.handshake.stream(request)
        else:
            response = error_response(_NOT_ALLOWED, None)
        await response(scope, receive, send)


class McpEndpoint:
    def __init__(self, services: Services, sessions: SessionIds) -> None:
        self.services = services
        self.handshake = Handshake(services, sessions)

    async def post(self, request: Request) -> Response:
        if not media_type.is_json(request.headers.getlist("content-type")):
            error = McpError(
                INVALID_REQUEST, "Content-Type must be application/json", http_status=415
            )
            return error_response(error, None)
        body = await request.body()
        try:
            message, request_id = parse_envelope(body)
        except McpError as error:
            observed.note_error(request, error.code)
            return error_response(error, None)
        observed.note_message(request, message)
        with tracing.server_span(request.headers, message) as span:
            response = await self._serve(request, message, request_id)
            tracing.annotate(span, request, response.status_code, message)
            return response

    async def _serve(
        self, request: Request, message: dict[str, Any], request_id: RequestId
    ) -> Response:
        in_2025 = False
        try:
            exchange = Exchange.of(request, message, request_id)
            in_2025 = _is_2025(exchange)
            if in_2025:
                return await self.handshake.post(exchange)
            return await self._serve_2026(exchange)
        except McpError as error:
            observed.note_error(request, error.code)
            # An insufficient scope is 403 in every era: clients step up on the status.
            status_200 = in_2025 and not isinstance(error, InsufficientScope)
            return error_response(error, request_id, status=200 if status_200 else None)
        except Exception:
            log.exception("unhandled error in %s", request.url.path)
            observed.note_error(request, INTERNAL_ERROR)
            internal = McpError(INTERNAL_ERROR, "Internal error")
            return error_response(internal, request_id, status=200 if in_2025 else None)

    async def _serve_2026(self, exchange: Exchange) -> Response:
        request, method = exchange.request, exchange.method
        if method is None:
            raise McpError(INVALID_REQUEST, "Clients may only send requests and notifications")
        if exchange.request_id is None:
            headers.check_method(request.headers, method)
            return Response(status_code=202)
        entry = dispatch.lookup(method, V2026)
        headers.check_method(request.headers, method)
        params = params_of(exchange.message)
        meta = request_meta(params)
        headers.check_protocol_version(request.headers, meta.protocol_version)
        require_supported_version(meta.protocol_version)
        headers.check_name(request.headers, entry.name_param, method, params)
        credential, expires_at = exchange.credential
        ctx = context_2026(
            exchange.request_id,
            method,
            exchange.principal,
            request.headers,
            meta=meta,
            grant=exchange.grant,
            identity=exchange.identity,
            credential=credential,
            credential_expires_at=expires_at,
        )
        return await exchange.answer(entry, ctx, self.services, params, stamp=True)


def _is_2025(exchange: Exchange) -> bool:
    if names_protocol_version(exchange.message):
        return False
    header_version = exchange.request.headers.get("mcp-protocol-version")
    return (
        exchange.method == "initialize"
        or SESSION_HEADER.lower() in exchange.request.headers
        or header_version in HANDSHAKE_VERSIONS
    )
