"""Probes: /healthz is liveness only; /readyz means "this replica can serve", so it stays 200
once the only worker (a real process) is killed, while the workers gauge turns 0 though
Temporal still lists its poller; /readyz turns 503 when Temporal stops (when a read failing on
Temporal is counted)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from temporalio.client import Client

from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.temporal.connection import observed_connection
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings
from tests.conftest import Stack, running_stack
from tests.dev_process import MCP_TASKS


class ShortPollTemporal(TemporalDevServer):
    """A dev server whose long polls end after 2 s, so a live worker polls again often and a
    dead one goes stale in seconds rather than a minute."""

    def command(self) -> list[str]:
        return [
            *super().command(),
            "--dynamic-config-value",
            'matching.longPollExpirationInterval="2s"',
        ]


@contextlib.asynccontextmanager
async def short_poll_temporal(tmp_path: Path) -> AsyncIterator[TemporalDevServer]:
    server = ShortPollTemporal(tmp_path / "temporal", port=free_port())
    server.start()
    try:
        await server.wait_ready()
        yield server
    finally:
        server.stop()


async def wait_ready_status(
    stack: Stack, status: int, within: float, missing: str | None = None
) -> dict[str, Any]:
    """The /readyz body once it answers `status` (and, if given, names `missing`): a probe
    result is cached for a second, so the answer right after a change may be the one before."""
    deadline = time.monotonic() + within
    while True:
        response = await stack.http.get(stack.url.replace("/mcp", "/readyz"))
        body: dict[str, Any] = response.json()
        if response.status_code == status and (missing is None or missing in body["missing"]):
            return body
        assert time.monotonic() < deadline, (
            f"/readyz stayed {response.status_code}: {response.text}"
        )
        await asyncio.sleep(0.25)


async def workers_polling(stack: Stack) -> float | None:
    """mcp_tasks_workers_polling of the stack's /metrics; None while it is not exported."""
    text = (await stack.http.get(stack.url.replace("/mcp", "/metrics"))).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "mcp_tasks_workers_polling":
                return sample.value
    return None


async def wait_workers_polling(stack: Stack, wanted: float, within: float) -> None:
    deadline = time.monotonic() + within
    while (seen := await workers_polling(stack)) != wanted:
        assert time.monotonic() < deadline, f"workers_polling stayed {seen}, not {wanted}"
        await asyncio.sleep(0.25)


@pytest.mark.e2e  # a dev server and a worker process of its own: killing the worker is the test
async def test_a_killed_worker_shows_in_the_workers_gauge_and_readyz_stays_ready(
    tmp_path: Path, registry: ToolRegistry
) -> None:
    async with short_poll_temporal(tmp_path) as temporal:
        client = await Client.connect(temporal.address, **observed_connection(Settings()))
        async with running_stack(
            client, registry, ready_poller_max_age_s=6, metrics_refresh_s=0.5
        ) as stack:
            live = await stack.http.get(stack.url.replace("/mcp", "/healthz"))
            assert live.json() == {"status": "ok"}
            await stack.stop_worker()  # the only worker is the process started below
            env = {
                **os.environ,
                "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
                "MCP_TASKS_TASK_QUEUE": stack.settings.task_queue,
                "MCP_TASKS_TOOLSET": "demo",
                "MCP_TASKS_LOG_FORMAT": "json",
            }
            worker = await asyncio.create_subprocess_exec(
                MCP_TASKS, "worker", env=env, stderr=subprocess.DEVNULL, start_new_session=True
            )
            try:
                await wait_workers_polling(stack, 1, within=60)
                worker.send_signal(signal.SIGKILL)
                await worker.wait()
                # Temporal may still list the dead poller; it no longer counts as a worker.
                await wait_workers_polling(stack, 0, within=60)
            finally:
                if worker.returncode is None:
                    worker.kill()
                    await worker.wait()
            ready = await wait_ready_status(stack, 200, within=5)
            assert ready == {
                "status": "ready",
                "missing": [],
                "temporal": "ok",
                "searchAttributes": "ok",
            }
            temporal.stop()
            down = await wait_ready_status(stack, 503, within=10, missing="temporal")
            assert down["missing"] == ["temporal"] and down["temporal"].startswith("unreachable")
            live = await stack.http.get(stack.url.replace("/mcp", "/healthz"))
            assert live.status_code == 200  # liveness never asks Temporal
            before = await describe_errors(stack)
            reply = await stack.mcp.get_task(f"mcp-task-{'0' * 32}")
            assert reply.status == 503, reply.body
            assert await describe_errors(stack) == before + 1


async def describe_errors(stack: Stack) -> float:
    """mcp_tasks_temporal_rpc_errors_total of describe_workflow, whatever the gRPC code."""
    text = (await stack.http.get(stack.url.replace("/mcp", "/metrics"))).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "mcp_tasks_temporal_rpc_errors_total"
        and sample.labels["operation"] == "describe_workflow"
    )
