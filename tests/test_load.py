"""The short form of `make load` (bench/load.py): 60 tasks in flight, 10 clients polling at
pollIntervalMs, on a `mcp-tasks dev` of its own; nothing lost, no 5xx. And what the full load
found: a Temporal too slow to answer made tasks/get a 500."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from temporalio.client import Client

from bench.load import markdown, on_dev
from bench.load_split import on_split
from mcp_server.protocol.frame.errors import INTERNAL_ERROR
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.tools.registry import ToolRegistry
from tests.conftest import running_stack

pytestmark = pytest.mark.slow


async def test_the_short_load_loses_nothing_and_answers_no_5xx(tmp_path: Path) -> None:
    results = await on_dev(60, 10, tmp_path, answer_after=2, step_seconds=0.2, timeout_s=300)
    assert results["lost"] == 0, results["lost_detail"]
    assert results["not_created"] == 0, results["not_created_detail"]
    assert results["http_5xx"] == 0, results["http_statuses"]
    assert results["peak_in_flight"] == 60
    # Every task was created, read and answered: at least one of each per task.
    assert results["tools_call"]["n"] == 60 and results["tasks_update"]["n"] >= 60
    assert results["tasks_get"]["n"] >= 60 * 3
    assert results["dev_exit_code"] == 0
    assert "| lost tasks (acknowledged, not ended as expected) | 0 |" in markdown(results)


async def test_the_short_load_on_separate_server_worker_and_temporal_reports_each_ones_rss(
    tmp_path: Path,
) -> None:
    """`make load`'s default topology: Temporal, `mcp-tasks server` and `mcp-tasks worker` as
    three processes, the peak RSS of each reported, nothing lost, no 5xx, both exit 0."""
    results = await on_split(60, 10, tmp_path, answer_after=2, step_seconds=0.2, timeout_s=300)
    assert results["lost"] == 0, results["lost_detail"]
    assert results["not_created"] == 0, results["not_created_detail"]
    assert results["http_5xx"] == 0, results["http_statuses"]
    assert results["peak_in_flight"] == 60 and results["tasks_update"]["n"] >= 60
    peaks = results["peak_rss_mib"]
    assert set(peaks) == {"mcp-tasks server", "mcp-tasks worker", "temporal (dev server)"}
    assert all(mib > 0 for mib in peaks.values()), peaks
    assert results["exit_codes"] == {"server": 0, "worker": 0}
    assert "| peak RSS, mcp-tasks worker |" in markdown(results)
    assert set(results["cpu_s"]) == set(peaks), results["cpu_s"]
    # The server's own count of where its task reads came from (its metrics port).
    server = results["server_metrics"]
    assert set(server["task_reads"]) == {"followed", "stale", "terminal", "temporal"}, server
    assert server["task_reads"]["temporal"] > 0 and 0 < server["temporal_reads_per_tasks_get"]
    assert server["latency_by_operation"]["tasks/get"]["n"] >= results["tasks_get"]["n"]


async def test_a_temporal_too_slow_to_answer_is_503_with_retry_after_not_500(
    tmp_path: Path, registry: ToolRegistry
) -> None:
    """Found by the full load: an RPC past its rpc_timeout fails with CANCELLED "Timeout
    expired", which tasks/get answered as a refusal (HTTP 500). A stopped (SIGSTOP) Temporal
    stands in for one too loaded to answer in time."""
    temporal = TemporalDevServer(tmp_path / "temporal", port=free_port())
    temporal.start()
    try:
        await temporal.wait_ready()
        assert temporal.process is not None
        client = await Client.connect(temporal.address)
        # Not followed (max_followed_tasks=0): its read goes to Temporal, as an unfollowed one's
        # does (a followed task is answered from its copy while its long-poll vouches for it).
        unfollowed = {"max_open_tasks_per_principal": 0, "max_followed_tasks": 0}
        async with running_stack(client, registry, **unfollowed) as stack:
            task_id = await stack.mcp.create_task("slow_compute", {"seconds": 60})
            os.kill(temporal.process.pid, signal.SIGSTOP)
            try:
                reply = await stack.mcp.get_task(task_id)
            finally:
                os.kill(temporal.process.pid, signal.SIGCONT)
            assert reply.status == 503, reply.body
            assert reply.error["code"] == INTERNAL_ERROR
            assert "Timeout expired" in reply.error["message"]
            assert reply.error["data"]["retryAfterMs"] > 0
            assert (await stack.mcp.cancel_task(task_id)).status == 200
    finally:
        temporal.stop()
