"""The 2025-11-25 era (and the handshake revisions before it) on Streamable HTTP.

- `initialize` mints the signed session (sessions.py), at a rate per principal: each session
  may lead to a task list in Temporal.
- Every other message needs a valid session: 400 without one, 404 for one that is not ours
  (or not the sender's). Notifications are 202.
- A client's response to a request the server sent it (an answer to a task's question) is
  routed to the task by its id, 202; a refusal is answered with the response's id.
- JSON-RPC errors travel with HTTP 200, as clients of that era expect.
- `GET` with the session and `Accept: text/event-stream` opens the session's stream, which
  carries its tasks' questions (v2025/session_stream.py); without either, 405.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcp_server.http import sse
from mcp_server.http.exchange import Exchange, error_response
from mcp_server.http.sessions import Session, SessionIds
from mcp_server.observability import record as observed
from mcp_server.protocol import dispatch
from mcp_server.protocol.core.context import Services
from mcp_server.protocol.frame.envelope import params_of
from mcp_server.protocol.frame.errors import INVALID_REQUEST, McpError
from mcp_server.protocol.frame.models import parse_params, result_message
from mcp_server.protocol.frame.wire import V2025
from mcp_server.protocol.v2025 import client_responses, session_stream
from mcp_server.protocol.v2025.methods import InitializeParams, negotiate
from mcp_server.protocol.v2025.request_context import context_2025
from mcp_tasks.identity import NOBODY

SESSION_HEADER = "Mcp-Session-Id"

_NO_STREAM = McpError(
    INVALID_REQUEST,
    "No standalone stream here: at 2025-11-25 a session's GET stream (Accept: "
    "text/event-stream) carries its tasks' questions; at 2026-07-28 use subscriptions/listen",
    http_status=405,
    headers={"Allow": "POST"},
)
_UNKNOWN_SESSION = McpError(INVALID_REQUEST, "Session not found: initialize again", http_status=404)


def session_digest(session_id: str) -> str:
    """What a task records of the session that created it: never the session id itself."""
    return hashlib.sha256(f"session:{session_id}".encode()).hexdigest()[:32]


class Handshake:
    """The handshake era's messages: `post` for a POST, `stream` for the GET stream."""

    def __init__(self, services: Services, sessions: SessionIds) -> None:
        self.services = services
        self.sessions = sessions

    async def post(self, exchange: Exchange) -> Response:
        method = exchange.method
        if method == "initialize":
            return await self._initialize(exchange)
        try:
            session = self._session(exchange)
        except McpError as error:
            observed.note_error(exchange.request, error.code)
            return error_response(error, exchange.request_id)
        if method is None:
            await self._client_response(exchange, session)
            return Response(status_code=202)
        if exchange.request_id is None:
            return Response(status_code=202)  # notifications/initialized, cancelled, ...
        entry = dispatch.lookup(method, V2025)
        params = params_of(exchange.message)
        ctx = context_2025(
            exchange.request_id,
            method,
            exchange.principal,
            exchange.request.headers,
            version=session.version,
            capabilities=session.capabilities,
            params=params,
            session=session_digest(exchange.request.headers[SESSION_HEADER]),
            grant=exchange.grant,
            identity=exchange.identity,
        )
        return await exchange.answer(entry, ctx, self.services, params, stamp=False)

    async def stream(self, request: Request) -> Response:
        """The standalone stream of a session: its tasks' questions (see
        `session_stream.session_questions`). Without a session, or without SSE, 405."""
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None or "text/event-stream" not in request.headers.get("accept", ""):
            return error_response(_NO_STREAM, None)
        session = self.sessions.open(session_id, request.state.principal)
        if session is None:
            return error_response(_UNKNOWN_SESSION, None)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        ctx = context_2025(
            "session-stream",
            "GET",
            request.state.principal,
            request.headers,
            version=session.version,
            capabilities=session.capabilities,
            session=session_digest(session_id),
            identity=getattr(request.state, "identity", NOBODY),
        ).streaming_to(queue.put)
        try:  # a stream slot is taken before the stream opens: a refusal is a 429
            questions = session_stream.session_questions(ctx, self.services)
        except McpError as error:
            return error_response(error, None)
        return sse.event_stream(sse.session_events(questions, queue))

    def _session(self, exchange: Exchange) -> Session:
        session_id = exchange.request.headers.get(SESSION_HEADER)
        if session_id is None:
            raise McpError(
                INVALID_REQUEST,
                "Bad Request: no Mcp-Session-Id; send initialize first",
                http_status=400,
            )
        session = self.sessions.open(session_id, exchange.principal)
        if session is None:
            raise McpError(
                INVALID_REQUEST,
                "Session not found: it was not issued by this server (or not to you); "
                "initialize again",
                http_status=404,
            )
        return session

    async def _initialize(self, exchange: Exchange) -> Response:
        if exchange.request_id is None:
            raise McpError(INVALID_REQUEST, "initialize must be a request (with an id)")
        # Each session may lead to a task list in Temporal: sessions are opened at a rate.
        self.services.limits.rates.initializes.take(exchange.principal)
        params = params_of(exchange.message)
        parsed = parse_params(InitializeParams, params)
        version = negotiate(parsed.protocol_version)
        session_id = self.sessions.mint(Session(version, parsed.capabilities, exchange.principal))
        ctx = context_2025(
            exchange.request_id,
            "initialize",
            exchange.principal,
            exchange.request.headers,
            version=version,
            capabilities=parsed.capabilities,
        )
        result = await dispatch.call(
            dispatch.lookup("initialize", V2025), ctx, self.services, params
        )
        body = result_message(result, exchange.request_id, None)
        return JSONResponse(body, headers={SESSION_HEADER: session_id})

    async def _client_response(self, exchange: Exchange, session: Session) -> None:
        """A client's answer to a question a task asked it: delivered as tasks/update would;
        a refusal (rate limited, task not found) is answered with the response's id."""
        refusal = await client_responses.route(
            self.services,
            exchange.message,
            exchange.request_id,
            principal=exchange.principal,
            identity=exchange.identity,
            capabilities=session.capabilities,
            version=session.version,
            headers=exchange.request.headers,
        )
        if refusal is not None:
            raise refusal
