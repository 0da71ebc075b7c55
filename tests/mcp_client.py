"""A minimal MCP 2026-07-28 client for the tests: real HTTP, headers as the spec asks, and
every response validated against the official schemas."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from mcp_server.protocol.frame.errors import RATE_LIMITED
from tests.wire_schemas import assert_valid, assert_valid_stream_message

VERSION = "2026-07-28"
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TASKS_AND_ELICITATION = {**TASKS, "elicitation": {}}
NO_CAPABILITIES: dict[str, Any] = {}
_NAMED = {
    "tools/call": "name",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def header_safe(value: str) -> str:
    if (
        value.isascii()
        and value.isprintable()
        and value == value.strip()
        and not value.startswith("=?")
    ):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


class Answer:
    """A JSON-RPC response as the tests read it, whatever carried it (HTTP, SSE, stdio)."""

    body: dict[str, Any]

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.body, f"expected a result, got {self.body}"
        return dict(self.body["result"])

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.body, f"expected an error, got {self.body}"
        return dict(self.body["error"])


@dataclass
class Reply(Answer):
    status: int
    body: dict[str, Any]
    headers: httpx.Headers


class McpClient:
    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self._ids = itertools.count(1)
        self.extra_headers: dict[str, str] = {}  # e.g. Authorization

    def headers_for(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            "Mcp-Method": method,
        }
        named = params.get(_NAMED.get(method, ""))
        if isinstance(named, str):
            headers["Mcp-Name"] = header_safe(named)
        return headers

    async def rpc(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        capabilities: dict[str, Any] = TASKS_AND_ELICITATION,
        headers: dict[str, str] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Reply:
        params = dict(params or {})
        if meta is None:
            meta = {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
            }
        params["_meta"] = meta
        request_id = next(self._ids)
        all_headers = httpx.Headers(self.headers_for(method, params))
        for name, value in {**self.extra_headers, **(headers or {})}.items():
            all_headers[name] = value  # replaces any spelling of the same header
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        response = await self.http.post(self.url, json=body, headers=all_headers)
        payload = response.json()
        assert_valid(method, payload)
        if "error" in payload and response.status_code not in (401, 403, 413, 415):
            assert payload.get("id") == request_id, "errors must echo the request id"
        return Reply(response.status_code, payload, response.headers)

    async def listen(
        self,
        notifications: dict[str, Any],
        *,
        capabilities: dict[str, Any] = TASKS_AND_ELICITATION,
        within: float = 15.0,
        on_ack: Callable[[], Awaitable[Any]] | None = None,
        until: Callable[[list[dict[str, Any]]], bool] = lambda messages: False,
    ) -> list[dict[str, Any]]:
        """Open subscriptions/listen and collect its messages until the server ends the stream
        or `until(messages)` holds; `on_ack` runs once the first message has arrived."""
        params = {
            "notifications": notifications,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
        }
        body = {
            "jsonrpc": "2.0",
            "id": "listen-1",
            "method": "subscriptions/listen",
            "params": params,
        }
        headers = {**self.headers_for("subscriptions/listen", params), **self.extra_headers}
        messages: list[dict[str, Any]] = []
        async with asyncio.timeout(within):
            async with self.http.stream("POST", self.url, json=body, headers=headers) as response:
                if not response.headers["content-type"].startswith("text/event-stream"):
                    await response.aread()
                    return [response.json()]
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        message = json.loads(line[len("data: ") :])
                        assert_valid_stream_message(message)
                        messages.append(message)
                        if len(messages) == 1 and on_ack is not None:
                            await on_ack()
                        if until(messages):
                            break
        return messages

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any
    ) -> Reply:
        params = {"name": name, "arguments": arguments or {}, **kwargs.pop("extra", {})}
        return await self.rpc("tools/call", params, **kwargs)

    async def create_task(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        result = (await self.call_tool(name, arguments)).result
        assert result["resultType"] == "task", result
        return str(result["taskId"])

    async def get_task(self, task_id: str, **kwargs: Any) -> Reply:
        return await self.rpc("tasks/get", {"taskId": task_id}, **kwargs)

    async def update_task(self, task_id: str, responses: dict[str, Any], **kwargs: Any) -> Reply:
        return await self.rpc(
            "tasks/update", {"taskId": task_id, "inputResponses": responses}, **kwargs
        )

    async def cancel_task(self, task_id: str, **kwargs: Any) -> Reply:
        return await self.rpc("tasks/cancel", {"taskId": task_id}, **kwargs)

    async def poll_task(self, task_id: str) -> Reply:
        """tasks/get as a good client polls: a RATE_LIMITED answer is waited out (as long as
        the server says) and asked again."""
        while True:
            reply = await self.get_task(task_id)
            if reply.body.get("error", {}).get("code") != RATE_LIMITED:
                return reply
            await asyncio.sleep(reply.error["data"]["retryAfterMs"] / 1000)

    async def wait_for(
        self,
        task_id: str,
        done: Callable[[dict[str, Any]], bool],
        within: float = 10.0,
        poll: float = 0.1,
    ) -> dict[str, Any]:
        """Poll tasks/get until `done(task)`; fail after `within` seconds."""
        deadline = time.monotonic() + within
        task: dict[str, Any] = {}
        while time.monotonic() < deadline:
            task = (await self.poll_task(task_id)).result
            if done(task):
                return task
            await asyncio.sleep(poll)
        raise AssertionError(f"task {task_id} did not get there within {within} s; last: {task}")

    async def wait_terminal(self, task_id: str, within: float = 10.0) -> dict[str, Any]:
        return await self.wait_for(
            task_id, lambda t: t["status"] in {"completed", "failed", "cancelled"}, within
        )

    async def wait_status(self, task_id: str, status: str, within: float = 10.0) -> dict[str, Any]:
        return await self.wait_for(task_id, lambda t: t["status"] == status, within)
