"""A minimal client of the handshake era (2025-11-25) for the tests: `initialize`, then requests
with the session id, answers read from JSON or SSE, server-to-client requests answered by a
handler (as a host answers an elicitation), every message validated against the official
2025-11-25 schema."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.mcp_client import Answer
from tests.wire_schemas import assert_valid_legacy

VERSION = "2025-11-25"
Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass
class Exchange(Answer):
    status: int
    body: dict[str, Any]
    # Notifications and server-to-client requests that came before the response (SSE).
    messages: list[dict[str, Any]] = field(default_factory=list)


class Client2025:
    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        capabilities: dict[str, Any] | None = None,
        on_request: Handler | None = None,
        accept: str = "application/json, text/event-stream",
    ) -> None:
        self.accept = accept
        self.http = http
        self.url = url
        self.capabilities = capabilities if capabilities is not None else {"elicitation": {}}
        self.on_request = on_request
        self.session_id: str | None = None
        self.version = VERSION
        self._ids = itertools.count(1)

    def headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": self.accept,
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
            headers["MCP-Protocol-Version"] = self.version
        return headers

    async def initialize(self, version: str = VERSION) -> dict[str, Any]:
        params = {
            "protocolVersion": version,
            "capabilities": self.capabilities,
            "clientInfo": {"name": "legacy-tests", "version": "0"},
        }
        reply = await self.request("initialize", params)
        self.session_id = reply.headers_session
        self.version = reply.result["protocolVersion"]
        await self.notify("notifications/initialized")
        return reply.result

    async def notify(self, method: str) -> int:
        body = {"jsonrpc": "2.0", "method": method}
        response = await self.http.post(self.url, json=body, headers=self.headers())
        return response.status_code

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Reply:
        request_id = next(self._ids)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params
        messages: list[dict[str, Any]] = []
        final: dict[str, Any] = {}
        async with self.http.stream("POST", self.url, json=body, headers=self.headers()) as resp:
            session = resp.headers.get("mcp-session-id")
            if resp.headers.get("content-type", "").startswith("text/event-stream"):
                async for line in resp.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    message = json.loads(line[len("data: ") :])
                    assert_valid_legacy(message)
                    if message.get("id") == request_id and "method" not in message:
                        final = message
                        break
                    messages.append(message)
                    if "method" in message and "id" in message:
                        await self._answer(message)
            else:
                await resp.aread()
                final = resp.json()
                assert_valid_legacy(final, method)
        return Reply(resp.status_code, final, messages, session)

    async def _answer(self, request: dict[str, Any]) -> None:
        assert self.on_request is not None, f"unexpected server request {request}"
        result = await self.on_request(request)
        body = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        response = await self.http.post(self.url, json=body, headers=self.headers())
        assert response.status_code == 202, response.text


@dataclass
class Reply(Exchange):
    headers_session: str | None = None
