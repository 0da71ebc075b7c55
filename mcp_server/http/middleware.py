"""ASGI middleware for what applies to every route, outermost first:

1. `RequestIdMiddleware`: every request gets an id (the client's `X-Request-Id` when it is a
   sane token, 1-128 of `A-Za-z0-9._:-` and nothing else, else a fresh one), echoed in the
   response's `X-Request-Id`.
2. `HostOriginMiddleware`: Host and Origin against DNS rebinding (origin.py): 403. The inbox's
   own forms post `Origin: null` (its pages send no referrer) with `Sec-Fetch-Site:
   same-origin`, which counts as no Origin there.
3. `AuthenticationMiddleware`: the credential (auth/) on every route but the public ones
   (`/healthz`, the OAuth protected-resource metadata) and the inbox's (`/inbox`, which checks
   its own session cookie): 401 / 403 with `WWW-Authenticate`,
   400 for more than one Authorization header, 503 with Retry-After when keys cannot be
   fetched. The principal's digest is left in `scope["state"]["principal"]`, what its
   credential allows (its scopes) in `scope["state"]["grant"]`, its name and approver ids
   (tasks/approvers.py) in `scope["state"]["identity"]`.
4. `BodyLimitMiddleware`: a body over the limit is 413, by its Content-Length before anything
   is read, or as it streams in.
Refusals are JSON-RPC error objects without an id (the body was not read), as MCP clients
expect from the endpoint.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_server.auth.authenticators import Authenticator, AuthError
from mcp_server.http.origin import OriginPolicy
from mcp_server.observability import metrics
from mcp_server.observability.record import SCOPE_KEY as OBSERVED_KEY
from mcp_server.observability.record import RequestRecord
from mcp_server.protocol.frame.errors import INVALID_REQUEST
from mcp_tasks.identity import identity_of
from mcp_tasks.logging import request_line
from mcp_tasks.request_id import HTTP_REQUEST_ID

PUBLIC_PATHS = ("/healthz", "/readyz", "/.well-known/")
# The approval inbox checks its own signed session cookie (mcp_server/inbox/signin.py); no
# other route ever reads that cookie.
INBOX_PATH = "/inbox"
# Probes: an orchestrator sends the pod's IP as Host (Kubernetes' httpGet probes), so they skip
# the Host check; they say only whether the process and its dependencies are up.
PROBE_PATHS = frozenset({"/healthz", "/readyz"})
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


async def refuse(
    send: Send, status: int, message: str, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "error": {"code": INVALID_REQUEST, "message": message}}
    ).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _state(scope: Scope) -> dict[str, Any]:
    state: dict[str, Any] = scope.setdefault("state", {})
    return state


class RequestIdMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        offered = Headers(scope=scope).get("x-request-id", "")
        request_id = offered if _SANE_ID.fullmatch(offered) else secrets.token_hex(8)
        _state(scope)["request_id"] = request_id

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["X-Request-Id"] = request_id
            await send(message)

        bound = HTTP_REQUEST_ID.set(request_id)  # every line logged meanwhile carries it
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            HTTP_REQUEST_ID.reset(bound)


class HostOriginMiddleware:
    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not _is_probe(scope):
            headers = Headers(scope=scope)
            host = headers.get("host")
            origin = headers.get("origin")
            if origin == "null" and _same_origin_inbox_form(scope, headers):
                origin = None
            allowed = self.policy.host_allowed(host) and self.policy.origin_allowed(origin, host)
            if not allowed:
                await refuse(send, 403, "Forbidden: Host or Origin not allowed")
                return
        await self.app(scope, receive, send)


def _same_origin_inbox_form(scope: Scope, headers: Headers) -> bool:
    """A form of the inbox posted to itself: under its `Referrer-Policy: no-referrer` a browser
    sends `Origin: null`, and says `Sec-Fetch-Site: same-origin` (a header no page can set).
    The Host check still applies; the CSRF token and the SameSite=Strict cookie do the rest."""
    return _is_inbox(str(scope["path"])) and headers.get("sec-fetch-site") == "same-origin"


def _is_probe(scope: Scope) -> bool:
    """A plain GET of a probe, not sent by a web page (no Origin)."""
    if scope["method"] != "GET" or scope["path"] not in PROBE_PATHS:
        return False
    return not any(name == b"origin" for name, _ in scope["headers"])


class AuthenticationMiddleware:
    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or path.startswith(PUBLIC_PATHS) or _is_inbox(path):
            await self.app(scope, receive, send)
            return
        try:
            principal = await self.authenticator.authenticate(_authorization(scope))
        except AuthError as err:
            reason = _REASONS.get(err.status, "Forbidden")
            await refuse(send, err.status, f"{reason}: {err.description}", err.headers())
            return
        _state(scope)["principal"] = principal.digest
        _state(scope)["grant"] = self.authenticator.grant(principal)
        _state(scope)["identity"] = identity_of(principal)
        _state(scope)["credential"] = (principal.credential, principal.credential_expires_at)
        await self.app(scope, receive, send)


def _is_inbox(path: str) -> bool:
    return path == INBOX_PATH or path.startswith(INBOX_PATH + "/")


_REASONS = {400: "Bad Request", 401: "Unauthorized", 503: "Service Unavailable"}


def _authorization(scope: Scope) -> str | None:
    """The one Authorization header; two or more are refused (which one would count?)."""
    values = Headers(scope=scope).getlist("authorization")
    if len(values) > 1:
        raise AuthError(400, "send exactly one Authorization header", error="invalid_request")
    return values[0] if values else None


class BodyTooLarge(Exception):
    pass


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._too_large(send)
            return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._too_large(send)

    async def _too_large(self, send: Send) -> None:
        await refuse(send, 413, f"Request body exceeds the limit of {self.limit} bytes")


class ObservabilityMiddleware:
    """One log line and the request metrics per MCP request (observability/), inside the
    request id and outside Host/Origin and authentication, so refusals count too. The
    transport tells it the JSON-RPC method, the task and the outcome (observability/record.py);
    the latency is the time to the first byte of the answer (for a stream: until it opened)."""

    def __init__(self, app: ASGIApp, paths: tuple[str, ...] = ("/mcp",)) -> None:
        self.app = app
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        record = RequestRecord()
        state = _state(scope)
        state[OBSERVED_KEY] = record
        status = 500
        first_byte: float | None = None

        async def timed_send(message: Message) -> None:
            nonlocal status, first_byte
            if message["type"] == "http.response.start":
                status, first_byte = message["status"], time.perf_counter()
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            outcome = record.outcome or ("ok" if status < 400 else f"http_{status}")
            latency = None if first_byte is None else first_byte - started
            metrics.record_request(record.method, outcome, record.created_task, latency)
            fields: dict[str, Any] = {
                "requestId": state.get("request_id"),
                "jsonrpcId": record.jsonrpc_id,
                "method": record.method,
                "taskId": record.task_id,
                "principal": state.get("principal"),
                "outcome": outcome,
                "status": status,
                "durationMs": round((time.perf_counter() - started) * 1000, 2),
            }
            if record.trace_id is not None:
                fields |= {"trace_id": record.trace_id, "span_id": record.span_id}
            request_line(fields)
