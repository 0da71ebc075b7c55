"""Streamable HTTP: one endpoint, both protocol eras, one JSON-RPC message per POST (wire §1.8).

What every route needs (Host/Origin, authentication, body size, request id) is middleware.
Here, for a POST:
 1. Content-Type must be JSON: 415. JSON parse: -32700. Envelope (object, jsonrpc "2.0", id
    string|integer, no batches): -32600.
 2. The era. A request whose `params._meta` names a protocolVersion is 2026-07-28 (even an
    `initialize`, which is then an unknown method). `initialize`, a request with
    `Mcp-Session-Id`, or one whose MCP-Protocol-Version is a handshake version, is the
    handshake era (2025-11-25 and older). Anything else is 2026-07-28, so a client that forgot
    `_meta` gets the modern errors it can probe with.
 3. 2026-07-28 (stateless; `Mcp-Session-Id` ignored, none minted): notifications are checked
    for Mcp-Method then 202; unknown method -32601/404 before anything else; Mcp-Method
    -32020; params an object -32602; `_meta` -32602/400; MCP-Protocol-Version equal to `_meta`
    -32020; version supported -32022; Mcp-Name -32020 (a missing one tolerated on tasks/*).
 4. Handshake era: `initialize` mints the signed session (sessions.py); every other message
    needs a valid one (400 without, 404 for one that is not ours). Notifications 202. A
    client's response to a request the server sent it (an answer to a task's question) is
    routed to the task by its id, 202. JSON-RPC errors travel with HTTP 200 there, as clients
    of that era expect.
 5. The answer is JSON, unless the method streams (`subscriptions/listen`) or sends messages
    related to the request before its result (progress, a task's questions): then an SSE
    stream that ends with the response. Closing that stream stops the request, never a task.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from mcp_server.http import media_type
from mcp_server.http.sessions import Session, SessionCodec
from mcp_server.observability import record as observed
from mcp_server.observability import tracing
from mcp_server.protocol import dispatch
from mcp_server.protocol.core import audit
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.grants import NO_SCOPE, Grant, InsufficientScope
from mcp_server.protocol.frame import routing_headers as headers
from mcp_server.protocol.frame.envelope import names_protocol_version as _is_modern
from mcp_server.protocol.frame.envelope import params_of as _params
from mcp_server.protocol.frame.envelope import parse_envelope as _parse_envelope
from mcp_server.protocol.frame.envelope import require_supported_version
from mcp_server.protocol.frame.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    McpError,
)
from mcp_server.protocol.frame.models import (
    error_message,
    parse_params,
    request_meta,
    result_message,
    to_message,
)
from mcp_server.protocol.frame.wire import HANDSHAKE_VERSIONS, V2025, V2026
from mcp_server.protocol.v2025 import client_responses, session_stream
from mcp_server.protocol.v2025.methods import InitializeParams, negotiate
from mcp_tasks.identity import NOBODY, Identity

log = logging.getLogger("mcp_server.http.transport")

RequestId = str | int | None
SESSION_HEADER = "Mcp-Session-Id"
KEEPALIVE_S = 15.0
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def error_response(
    error: McpError, request_id: RequestId, *, status: int | None = None
) -> Response:
    body = to_message(error_message(error, request_id))
    return JSONResponse(
        body, status_code=status or error.http_status, headers=error.headers or None
    )


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


def _sse(message: BaseModel | dict[str, Any] | None) -> bytes:
    if message is None:
        return b": keep-alive\n\n"
    data = json.dumps(to_message(message), separators=(",", ":"), ensure_ascii=False)
    return f"event: message\ndata: {data}\n\n".encode()


@dataclass
class Exchange:
    """One POST being served: the request, its parsed message, and who sent it."""

    request: Request
    message: dict[str, Any]
    request_id: RequestId
    principal: str
    grant: Grant = NO_SCOPE
    identity: Identity = NOBODY
    credential: tuple[str, float | None] = ("", None)

    @property
    def method(self) -> str | None:
        method = self.message.get("method")
        return method if isinstance(method, str) else None

    def accepts_stream(self) -> bool:
        return "text/event-stream" in self.request.headers.get("accept", "")


class McpEndpoint:
    def __init__(self, services: Services, sessions: SessionCodec) -> None:
        self.services = services
        self.sessions = sessions

    async def post(self, request: Request) -> Response:
        if not media_type.is_json(request.headers.getlist("content-type")):
            error = McpError(
                INVALID_REQUEST, "Content-Type must be application/json", http_status=415
            )
            return error_response(error, None)
        principal: str = request.state.principal
        body = await request.body()
        try:
            message, request_id = _parse_envelope(body)
        except McpError as error:
            observed.note_error(request, error.code)
            return error_response(error, None)
        observed.note_message(request, message)
        with tracing.server_span(request.headers, message) as span:
            response = await self._serve(request, message, request_id, principal)
            tracing.annotate(span, request, response.status_code, message)
            return response

    async def _serve(
        self, request: Request, message: dict[str, Any], request_id: RequestId, principal: str
    ) -> Response:
        legacy = False
        try:
            grant: Grant = getattr(request.state, "grant", NO_SCOPE)
            identity: Identity = getattr(request.state, "identity", NOBODY)
            credential = getattr(request.state, "credential", ("", None))
            exchange = Exchange(
                request, message, request_id, principal, grant, identity, credential
            )
            legacy = self._is_legacy(exchange)
            if legacy:
                return await self._legacy(exchange)
            return await self._modern(exchange)
        except McpError as error:
            observed.note_error(request, error.code)
            # An insufficient scope is 403 in every era: clients step up on the status.
            legacy_status = legacy and not isinstance(error, InsufficientScope)
            return error_response(error, request_id, status=200 if legacy_status else None)
        except Exception:
            log.exception("unhandled error in %s", request.url.path)
            observed.note_error(request, INTERNAL_ERROR)
            internal = McpError(INTERNAL_ERROR, "Internal error")
            return error_response(internal, request_id, status=200 if legacy else None)

    def _is_legacy(self, exchange: Exchange) -> bool:
        if _is_modern(exchange.message):
            return False
        header_version = exchange.request.headers.get("mcp-protocol-version")
        return (
            exchange.method == "initialize"
            or SESSION_HEADER.lower() in exchange.request.headers
            or header_version in HANDSHAKE_VERSIONS
        )

    # ----- 2026-07-28 ---------------------------------------------------------------------

    async def _modern(self, exchange: Exchange) -> Response:
        request, method = exchange.request, exchange.method
        if method is None:
            raise McpError(INVALID_REQUEST, "Clients may only send requests and notifications")
        if exchange.request_id is None:
            headers.check_method(request.headers, method)
            return Response(status_code=202)
        entry = dispatch.lookup(method, V2026)
        headers.check_method(request.headers, method)
        params = _params(exchange.message)
        meta = request_meta(params)
        headers.check_protocol_version(request.headers, meta.protocol_version)
        require_supported_version(meta.protocol_version)
        headers.check_name(request.headers, entry.name_param, method, params)
        ctx = RequestContext(
            request_id=exchange.request_id,
            method=method,
            capabilities=meta.client_capabilities,
            principal=exchange.principal,
            headers=request.headers,
            progress_token=meta.progress_token,
            grant=exchange.grant,
            identity=exchange.identity,
            credential=exchange.credential[0],
            credential_expires_at=exchange.credential[1],
        )
        return await self._run(exchange, entry, ctx, params, stamp=True)

    # ----- 2025-11-25 and older -----------------------------------------------------------

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

    async def _legacy(self, exchange: Exchange) -> Response:
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
        params = _params(exchange.message)
        meta = params.get("_meta")
        progress_token = meta.get("progressToken") if isinstance(meta, dict) else None
        ctx = RequestContext(
            request_id=exchange.request_id,
            method=method,
            capabilities=session.capabilities,
            principal=exchange.principal,
            headers=exchange.request.headers,
            version=session.version,
            progress_token=progress_token,
            session=session_digest(exchange.request.headers[SESSION_HEADER]),
            grant=exchange.grant,
            identity=exchange.identity,
        )
        return await self._run(exchange, entry, ctx, params, stamp=False)

    async def get(self, request: Request) -> Response:
        """The standalone stream of a 2025-11-25 session: its tasks' questions (see
        `session_stream.session_questions`). Without a session, or without SSE, 405."""
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None or "text/event-stream" not in request.headers.get("accept", ""):
            return error_response(_NO_STREAM, None)
        session = self.sessions.open(session_id, request.state.principal)
        if session is None:
            return error_response(_UNKNOWN_SESSION, None)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        ctx = RequestContext(
            request_id="session-stream",
            method="GET",
            capabilities=session.capabilities,
            principal=request.state.principal,
            headers=request.headers,
            version=session.version,
            send=queue.put,
            streaming=True,
            session=session_digest(session_id),
            identity=getattr(request.state, "identity", NOBODY),
        )
        try:  # a stream slot is taken before the stream opens: a refusal is a 429
            questions = session_stream.session_questions(ctx, self.services)
        except McpError as error:
            return error_response(error, None)
        return StreamingResponse(
            self._session_stream(questions, queue),
            media_type="text/event-stream",
            headers=SSE_HEADERS,
        )

    async def _session_stream(
        self, questions: AsyncIterator[None], queue: asyncio.Queue[dict[str, Any]]
    ) -> AsyncIterator[bytes]:
        quiet_since = time.monotonic()
        async for _ in questions:
            while not queue.empty():
                quiet_since = time.monotonic()
                yield _sse(queue.get_nowait())
            if time.monotonic() - quiet_since >= KEEPALIVE_S:
                quiet_since = time.monotonic()
                yield _sse(None)

    async def _initialize(self, exchange: Exchange) -> Response:
        if exchange.request_id is None:
            raise McpError(INVALID_REQUEST, "initialize must be a request (with an id)")
        # Each session may lead to a task list in Temporal: sessions are opened at a rate.
        self.services.limits.rates.initializes.take(exchange.principal)
        params = _params(exchange.message)
        parsed = parse_params(InitializeParams, params)
        version = negotiate(parsed.protocol_version)
        session_id = self.sessions.mint(Session(version, parsed.capabilities, exchange.principal))
        ctx = RequestContext(
            request_id=exchange.request_id,
            method="initialize",
            capabilities=parsed.capabilities,
            principal=exchange.principal,
            headers=exchange.request.headers,
            version=version,
        )
        result = await dispatch.call(
            dispatch.lookup("initialize", V2025), ctx, self.services, params
        )
        body = self._wrap(result, exchange.request_id, stamp=False)
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

    # ----- running a method -----------------------------------------------------------------

    def _wrap(self, result: BaseModel, request_id: RequestId, *, stamp: bool) -> dict[str, Any]:
        assert request_id is not None
        return result_message(result, request_id, self.services.server_info if stamp else None)

    async def _run(
        self,
        exchange: Exchange,
        entry: dispatch.Method,
        ctx: RequestContext,
        params: dict[str, Any],
        *,
        stamp: bool,
    ) -> Response:
        if entry.stream is not None:
            messages = await dispatch.open_stream(entry, ctx, self.services, params)
            return StreamingResponse(
                (_sse(m) async for m in messages),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        if not exchange.accepts_stream():
            result = await dispatch.call(entry, ctx, self.services, params)
            observed.note_created(exchange.request, audit.created_task_id(result))
            return JSONResponse(self._wrap(result, exchange.request_id, stamp=stamp))
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        async def send(message: dict[str, Any]) -> None:
            await queue.put(message)

        streaming_ctx = replace(ctx, send=send, streaming=True)
        job = asyncio.create_task(dispatch.call(entry, streaming_ctx, self.services, params))
        first = asyncio.create_task(queue.get())
        await asyncio.wait([job, first], return_when=asyncio.FIRST_COMPLETED)
        if job.done() and not first.done():
            first.cancel()
            result = job.result()  # raises McpError for the caller to answer
            observed.note_created(exchange.request, audit.created_task_id(result))
            return JSONResponse(self._wrap(result, exchange.request_id, stamp=stamp))
        return StreamingResponse(
            self._stream(job, first, queue, exchange.request_id, stamp=stamp),
            media_type="text/event-stream",
            headers=SSE_HEADERS,
        )

    async def _stream(
        self,
        job: asyncio.Task[BaseModel],
        first: asyncio.Task[dict[str, Any]],
        queue: asyncio.Queue[dict[str, Any]],
        request_id: RequestId,
        *,
        stamp: bool,
    ) -> AsyncIterator[bytes]:
        try:
            if first.done():
                yield _sse(first.result())
            else:
                first.cancel()
            while True:
                getter = asyncio.create_task(queue.get())
                done, _ = await asyncio.wait([job, getter], timeout=KEEPALIVE_S,
                                             return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
                if getter in done:
                    yield _sse(getter.result())
                    continue
                getter.cancel()
                if job in done:
                    break
                yield _sse(None)
            while not queue.empty():
                yield _sse(queue.get_nowait())
            try:
                response = self._wrap(job.result(), request_id, stamp=stamp)
            except McpError as error:
                response = to_message(error_message(error, request_id))
            yield _sse(response)
        finally:
            # The client closed the stream: stop serving the request (never the task).
            if not job.done():
                job.cancel()
