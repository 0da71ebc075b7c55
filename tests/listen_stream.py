"""A subscriptions/listen stream held open while a test acts, and a stack whose task store
counts what it is asked (the listen tests' view of Temporal's load)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
from temporalio.client import Client

from mcp_server.http.app import create_app
from mcp_server.protocol.core.context import Services
from mcp_server.runtime.devserver import free_port
from mcp_server.runtime.worker import build_worker
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.identity import Identity
from mcp_tasks.settings import Settings
from tests.conftest import serving
from tests.mcp_client import TASKS_AND_ELICITATION, VERSION, McpClient
from tests.wire_schemas import assert_valid_stream_message

Message = dict[str, Any]


class ListenStream:
    """`async with ListenStream(mcp, {"taskIds": [...]}) as stream`: the stream is open (its
    acknowledgement arrived) until the block ends, which closes it as a client would."""

    def __init__(self, mcp: McpClient, notifications: dict[str, Any]) -> None:
        self.mcp = mcp
        self.notifications = notifications
        self.messages: asyncio.Queue[Message] = asyncio.Queue()
        self.ended = asyncio.Event()
        self.comments = 0  # `:` lines: the server's keep-alives
        self._pump: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        params = {
            "notifications": self.notifications,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": TASKS_AND_ELICITATION,
            },
        }
        body = {
            "jsonrpc": "2.0",
            "id": "listen-1",
            "method": "subscriptions/listen",
            "params": params,
        }
        headers = self.mcp.headers_for("subscriptions/listen", params)
        try:
            async with self.mcp.http.stream(
                "POST", self.mcp.url, json=body, headers=headers, timeout=None
            ) as response:
                if not response.headers["content-type"].startswith("text/event-stream"):
                    await response.aread()
                    await self.messages.put({"refused": response.json()})
                    return
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        message = json.loads(line[len("data: ") :])
                        assert_valid_stream_message(message)
                        await self.messages.put(message)
                    elif line.startswith(":"):
                        self.comments += 1
        finally:
            self.ended.set()

    async def next(self, wanted: Callable[[Message], bool], within: float = 10.0) -> Message:
        """The next message for which `wanted` holds (earlier ones are skipped)."""
        async with asyncio.timeout(within):
            while True:
                message = await self.messages.get()
                if wanted(message):
                    return message

    async def __aenter__(self) -> ListenStream:
        self._pump = asyncio.create_task(self._run())
        first = await self.next(lambda m: True)
        if first.get("method") != "notifications/subscriptions/acknowledged":
            await self.__aexit__()
            raise AssertionError(f"the stream was not opened: {first}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._pump is not None
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump


def task_status(status: str) -> Callable[[Message], bool]:
    return lambda m: m.get("method") == "notifications/tasks" and m["params"]["status"] == status


def is_final(message: Message) -> bool:
    return message.get("id") == "listen-1"


class CountingStore(TemporalTaskStore):
    """The real store, counting its reads of a task and its history long-polls."""

    def __init__(self, client: Client, task_queue: str) -> None:
        super().__init__(client, task_queue)
        self.gets = 0
        self.long_polls = 0

    async def get(
        self, task_id: str, owner: str | None = None, identity: Identity | None = None
    ) -> TaskSnapshot | None:
        self.gets += 1
        return await super().get(task_id, owner, identity)

    async def wait_for_events(self, task_id: str, cursor: bytes) -> tuple[int, bytes | None] | None:
        self.long_polls += 1
        return await super().wait_for_events(task_id, cursor)


@contextlib.asynccontextmanager
async def counted_stack(
    client: Client, registry: ToolRegistry, **overrides: Any
) -> AsyncIterator[tuple[McpClient, Services, CountingStore]]:
    """A server (on a counting store) and a worker of their own task queue."""
    settings = Settings(
        task_queue=f"tests-{uuid.uuid4()}", port=free_port(), state_secret="s" * 32
    ).with_(**overrides)
    store = CountingStore(client, settings.task_queue)
    app = create_app(settings, registry, store=store)
    async with serving(app, settings.port):
        worker = build_worker(client, settings, registry)
        working = asyncio.create_task(worker.run())
        try:
            async with httpx.AsyncClient(timeout=15) as http:
                mcp = McpClient(http, f"http://127.0.0.1:{settings.port}/mcp")
                yield mcp, app.state.endpoint.services, store
        finally:
            await worker.shutdown()
            await working


async def eventually(condition: Callable[[], bool], within: float = 10.0) -> None:
    """Wait (bounded) until `condition()` holds."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.02)
