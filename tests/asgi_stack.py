"""The in-process tier: the whole app (`create_app`, every middleware, the endpoint) driven
through `httpx.ASGITransport` on the in-memory stores (tests/fakes/memory_store.py, and
memory_inbox.py for the approval inbox), which the contract suites hold to the Temporal ones.
No uvicorn, no Temporal, no worker: for the rules of the protocol layer (transport, headers,
eras, input rounds, hostile input, auth, limits) and the inbox's pages. What needs real
Temporal or a real socket stays on `stack`/`fresh_stack` (conftest.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from mcp_server.http.app import create_app
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings
from tests.fakes.clock import SettableClock
from tests.fakes.memory_inbox import MemoryInboxStore
from tests.fakes.memory_store import MemoryTaskStore
from tests.mcp_client import McpClient

# The Host the default settings (127.0.0.1) accept, as a real client on the socket would send.
BASE_URL = "http://127.0.0.1:8000"


@dataclass
class AsgiStack:
    settings: Settings
    registry: ToolRegistry
    store: MemoryTaskStore
    app: FastAPI
    mcp: McpClient
    http: httpx.AsyncClient
    url: str
    # The clock of the app and its store: `clock.advance(...)` instead of waiting a TTL out.
    clock: SettableClock


@contextlib.asynccontextmanager
async def asgi_running(registry: ToolRegistry, **overrides: Any) -> AsyncIterator[AsgiStack]:
    """The app on a fresh in-memory store, its lifespan entered, and a client bound to it."""
    settings = Settings(state_secret="s" * 32, port=8000).with_(**overrides)
    clock = SettableClock()
    store = MemoryTaskStore(clock=clock)
    app = create_app(settings, registry, store=store, inbox=MemoryInboxStore(store), now=clock)
    transport = httpx.ASGITransport(app=app)
    url = f"{BASE_URL}/mcp"
    try:
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(
                transport=transport, base_url=BASE_URL, timeout=15
            ) as http:
                mcp = McpClient(http, url)
                yield AsgiStack(settings, registry, store, app, mcp, http, url, clock)
    finally:
        await store.close()


def reads_of(stack: AsgiStack, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The task ids the store is asked for from now on."""
    reads: list[str] = []
    get = stack.store.get

    async def counted(task_id: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(task_id)
        return await get(task_id, *args, **kwargs)

    monkeypatch.setattr(stack.store, "get", counted)
    return reads


AsgiStackFactory = Callable[..., contextlib.AbstractAsyncContextManager[AsgiStack]]


@pytest.fixture
async def asgi_stack(registry: ToolRegistry) -> AsyncIterator[AsgiStack]:
    async with asgi_running(registry) as running:
        yield running


@pytest.fixture
def asgi_mcp(asgi_stack: AsgiStack) -> McpClient:
    return asgi_stack.mcp


@pytest.fixture
def fresh_asgi_stack(registry: ToolRegistry) -> AsgiStackFactory:
    """An in-process stack with settings of the test's own."""

    def make(**overrides: Any) -> contextlib.AbstractAsyncContextManager[AsgiStack]:
        return asgi_running(registry, **overrides)

    return make
