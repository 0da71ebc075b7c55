"""The stores every contract suite runs on: the Temporal ones (the session's dev server, one
worker per module on a fresh task queue) and the in-memory ones of the in-process tier."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from mcp_server.runtime.worker import build_worker
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings
from tests.fakes.clock import SettableClock
from tests.fakes.memory_store import MemoryTaskStore


@pytest.fixture
def clock() -> SettableClock:
    """The clock both stores read for TTLs: a test moves it instead of waiting."""
    return SettableClock()


@pytest.fixture
async def memory_store(clock: SettableClock) -> AsyncIterator[MemoryTaskStore]:
    memory = MemoryTaskStore(clock=clock)
    yield memory
    await memory.close()


@pytest.fixture(scope="module")
async def contract_queue(temporal_client: Client, registry: ToolRegistry) -> AsyncIterator[str]:
    """A task queue of this module's own with one worker for all its tests (starting a worker
    is the slow part; the tests' tasks, owners and sessions are their own)."""
    settings = Settings(task_queue=f"contract-{uuid.uuid4()}")
    async with build_worker(temporal_client, settings, registry):
        yield settings.task_queue


@pytest.fixture
async def temporal_store(
    temporal_client: Client, contract_queue: str, clock: SettableClock
) -> AsyncIterator[TemporalTaskStore]:
    """The Temporal store, a fresh one per test (its caches and clock are the test's),
    following the running tasks it reads again, as a server's does (tasks/followed.py)."""
    temporal = TemporalTaskStore(temporal_client, contract_queue, clock, followed_max=100)
    yield temporal
    await temporal.close()
