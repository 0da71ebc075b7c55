"""The pollIntervalMs a task advertises grows with its quiet time (tasks/poll_interval.py):
exactly the tool's interval while the task changed within 30 s, doubling with each doubling of
the quiet time up to MCP_TASKS_POLL_INTERVAL_MAX_MS; the tasks/get poll limiter keeps counting
against the tool's interval, so a client polling at that interval is never refused."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from temporalio.client import Client

from mcp_server.http.app import create_app
from mcp_server.runtime.devserver import free_port
from mcp_server.runtime.worker import build_worker
from mcp_server.tasks.poll_interval import advertised_ms
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import ConfigError, Settings
from tests.client_2025 import Client2025
from tests.conftest import serving
from tests.mcp_client import McpClient

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def changed(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize("quiet", [0, 1, 15, 29.9])
def test_a_task_changed_within_30_s_advertises_exactly_its_tools_interval(quiet: float) -> None:
    assert advertised_ms(2000, changed(quiet), NOW, 60_000) == 2000
    assert advertised_ms(500, changed(quiet), NOW, 60_000) == 500


@pytest.mark.parametrize(
    ("quiet", "expected"),
    [(30, 4000), (59, 4000), (60, 8000), (120, 16000), (240, 32000), (480, 60000), (9e6, 60000)],
)
def test_the_interval_doubles_with_each_doubling_of_quiet_time_up_to_the_cap(
    quiet: float, expected: int
) -> None:
    assert advertised_ms(2000, changed(quiet), NOW, 60_000) == expected


def test_the_cap_below_the_tools_interval_keeps_the_tools_interval_and_0_turns_it_off() -> None:
    assert advertised_ms(90_000, changed(3600), NOW, 60_000) == 90_000
    assert advertised_ms(2000, changed(3600), NOW, 5000) == 5000
    assert advertised_ms(2000, changed(3600), NOW, 0) == 2000


def test_an_unreadable_or_future_last_change_keeps_the_tools_interval() -> None:
    assert advertised_ms(2000, "not a time", NOW, 60_000) == 2000
    assert advertised_ms(2000, "2026-12-01T11:00:00", NOW, 60_000) == 2000  # no zone
    assert advertised_ms(2000, changed(-600), NOW, 60_000) == 2000


def test_the_cap_is_a_setting_that_refuses_a_negative_value() -> None:
    env = {"MCP_TASKS_POLL_INTERVAL_MAX_MS": "0"}
    assert Settings.from_env(env).poll_interval_max_ms == 0
    assert Settings.from_env({}).poll_interval_max_ms == 60_000
    with pytest.raises(ConfigError, match="MCP_TASKS_POLL_INTERVAL_MAX_MS"):
        Settings.from_env({"MCP_TASKS_POLL_INTERVAL_MAX_MS": "-1"})


# The tasks/get burst of the shifted stack: polls past it at the base interval prove the
# limiter counts against that interval, not the advertised one.
POLL_BURST = 6


@asynccontextmanager
async def shifted_stack(
    client: Client, registry: ToolRegistry, shift: list[timedelta], ticks: list[float]
) -> AsyncIterator[tuple[McpClient, Client2025]]:
    """A server whose task store reads the time `shift[0]` ahead of the real one (as if its
    tasks had been quiet that much longer), and a worker; the rate limits read `ticks[0]` as
    their monotonic time, so a test moves it instead of waiting a refill out."""
    settings = Settings(
        task_queue=f"tests-{uuid.uuid4()}",
        port=free_port(),
        state_secret="s" * 32,
        poll_burst=POLL_BURST,
    )
    store = TemporalTaskStore(
        client, settings.task_queue, lambda: datetime.now(UTC) + shift[0], 60_000
    )
    app = create_app(settings, registry, store=store, monotonic=lambda: ticks[0])
    async with serving(app, settings.port):
        worker = build_worker(client, settings, registry)
        working = asyncio.create_task(worker.run())
        try:
            async with httpx.AsyncClient(timeout=15) as http:
                url = f"http://127.0.0.1:{settings.port}/mcp"
                yield McpClient(http, url), Client2025(http, url)
        finally:
            await worker.shutdown()
            await working


async def test_a_quiet_task_advertises_a_longer_interval_and_polling_at_the_base_is_not_refused(
    temporal_client: Client, registry: ToolRegistry
) -> None:
    shift, ticks = [timedelta(0)], [0.0]
    async with shifted_stack(temporal_client, registry, shift, ticks) as (mcp, legacy):
        task_id = await mcp.create_task("confirm_delete", {"filename": "a.txt"})
        waiting = await mcp.wait_status(task_id, "input_required")
        assert waiting["pollIntervalMs"] == 500  # fresh: the tool's own interval
        shift[0] = timedelta(minutes=20)  # quiet for 20 minutes: 500 ms doubled 6 times, 32 s
        got = (await mcp.get_task(task_id)).result
        assert got["status"] == "input_required" and got["pollIntervalMs"] == 32_000
        await legacy.initialize()
        old = (await legacy.request("tasks/get", {"taskId": task_id})).result
        assert old["pollInterval"] == 32_000
        # The limiter counts against the tool's 500 ms: a client polling at that interval is
        # never refused (against 32 s it would be after the burst, made small to be short).
        for _ in range(POLL_BURST + 4):
            ticks[0] += 0.5
            reply = await mcp.get_task(task_id)
            assert reply.status == 200 and reply.result["pollIntervalMs"] == 32_000, reply.body
        assert (await mcp.cancel_task(task_id)).status == 200
