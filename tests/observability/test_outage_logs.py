"""A Temporal outage as on-call lives it, on separate processes: Temporal is killed under a
running server and worker. Every line they write meanwhile is one JSON object (the SDK core's
own retry lines included, forwarded through the same formatter), and the readiness gauge on the
metrics port turns 0 with nothing calling /readyz."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest

from mcp_server.observability.sdk_metrics import CORE_LOGGER
from mcp_server.runtime.devserver import free_port
from tests.crash_topology import McpTasksProcess, Topology
from tests.mcp_client import McpClient
from tests.observability.test_metrics_port import until_scraped, value


def log_of(part: McpTasksProcess) -> Path:
    return part.log_dir / f"{part.command}-{part.starts}.log"


def lines_since(part: McpTasksProcess, offset: int) -> list[str]:
    return log_of(part).read_bytes()[offset:].decode(errors="replace").splitlines()


@pytest.mark.slow  # Temporal, a server and a worker, each a process of its own
async def test_while_temporal_is_down_every_log_line_is_one_json_object(tmp_path: Path) -> None:
    metrics_port = free_port()
    topology = Topology(
        tmp_path, metrics_port=str(metrics_port), metrics_refresh_s="1", log_format="json"
    )
    try:
        topology.temporal.start()
        await topology.temporal.wait_ready()
        topology.worker.start()
        topology.server.start()
        await until_scraped(
            metrics_port,
            60,
            lambda s: (
                value(s, "mcp_tasks_ready") == 1 and value(s, "mcp_tasks_workers_polling") == 1
            ),
            "a ready server and a polling worker",
        )
        offsets = {part: log_of(part).stat().st_size for part in (topology.server, topology.worker)}
        topology.kill("temporal")
        async with httpx.AsyncClient(timeout=30) as http:
            mcp = McpClient(http, topology.url)
            reply = await mcp.get_task("no-such-task")  # a client meets the outage: a 503
            assert reply.status == 503, reply
        # Readiness follows Temporal from the background refresh, /readyz never called.
        await until_scraped(
            metrics_port, 60, lambda s: value(s, "mcp_tasks_ready") == 0, "mcp_tasks_ready 0"
        )
        # The SDK core's retries of the worker's polls arrive through Python logging.
        deadline = time.monotonic() + 90
        while not any(
            f'"logger":"{CORE_LOGGER}"' in line
            for line in lines_since(topology.worker, offsets[topology.worker])
        ):
            assert time.monotonic() < deadline, lines_since(
                topology.worker, offsets[topology.worker]
            )
            await asyncio.sleep(0.5)
        for part, offset in offsets.items():
            written = lines_since(part, offset)
            assert written, part.command
            for line in written:
                entry = json.loads(line)  # one object per line: no ANSI text, no traceback
                assert isinstance(entry, dict) and {"time", "level", "logger"} <= set(entry), line
                assert "\x1b[" not in line, line
    finally:
        topology.stop()
