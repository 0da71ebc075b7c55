"""ASGI middleware for what applies to every route, outermost first:

1. `RequestIdMiddleware`: every request gets an id (the client's `X-Request-Id` when it is a
   sane token, 1-128 of `A-Za-z0-9._:-` and nothing else, else a fresh one), echoed in the
   response's `X-Request-Id`.
2. `HostOriginMiddleware`: Host and Origin against DNS rebinding (origin.py): 403.
3. `AuthenticationMiddleware`: the credential (auth.py) on every route but the public ones
   (`/healthz`, the OAuth protected-resource metadata): 401 / 403 with `WWW-Authenticate`.
   The principal's digest is left in `scope["state"]["principal"]`.
4. `BodyLimitMiddleware`: a body over the limit is 413, by its Content-Length before anything
   is read, or as it streams in.
Refusals are JSON-RPC error objects without an id (the body was not read), as MCP clients
expect from the endpoint.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_server.http.auth import Authenticator, AuthError
from mcp_server.http.origin import OriginPolicy
from mcp_server.protocol.errors import INVALID_REQUEST

PUBLIC_PATHS = ("/healthz", "/.well-known/")
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

        await self.app(scope, receive, send_with_id)


class HostOriginMiddleware:
    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            host = headers.get("host")
            allowed = self.policy.host_allowed(host) and self.policy.origin_allowed(
                headers.get("origin"), host
            )
            if not allowed:
                await refuse(send, 403, "Forbidden: Host or Origin not allowed")
                return
        await self.app(scope, receive, send)


class AuthenticationMiddleware:
    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope["path"]).startswith(PUBLIC_PATHS):
            await self.app(scope, receive, send)
            return
        try:
            principal = await self.authenticator.authenticate(
                Headers(scope=scope).get("authorization")
            )
        except AuthError as err:
            reason = "Unauthorized" if err.status == 401 else "Forbidden"
            await refuse(
                send,
                err.status,
                f"{reason}: {err.description}",
                {"WWW-Authenticate": err.www_authenticate()},
            )
            return
        _state(scope)["principal"] = principal.digest
        await self.app(scope, receive, send)


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
