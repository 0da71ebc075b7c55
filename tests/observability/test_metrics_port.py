"""The setup the operations pages describe, as separate processes: Prometheus scrapes the server
ONLY on `MCP_TASKS_METRICS_PORT` (no token, the documented path) and nothing calls `/readyz`
(a compose stack's healthcheck calls `/healthz`). Every gauge an alert reads must still appear
and move: the workers, the waits, the stalled tasks, the refresh's timestamp and readiness."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from temporalio.client import Client
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

from mcp_server.runtime.devserver import free_port
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_STATUS, SEARCH_ATTRIBUTE_TOOL
from tests.crash_topology import Topology
from tests.mcp_client import McpClient

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> Samples:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def until_scraped(
    port: int, within: float, ok: Callable[[Samples], bool], what: str
) -> Samples:
    """Scrapes `port` until `ok(samples)` holds; fails naming `what` after `within` s."""
    deadline = time.monotonic() + within
    while True:
        try:
            samples = scrape(port)
        except httpx.TransportError:
            samples = {}
        if ok(samples):
            return samples
        assert time.monotonic() < deadline, f"{what} within {within} s: {samples}"
        await asyncio.sleep(0.25)


@pytest.mark.slow  # Temporal, a server and a worker, each a process of its own
async def test_scraping_only_the_metrics_port_refreshes_every_gauge_an_alert_reads(
    tmp_path: Path,
) -> None:
    metrics_port = free_port()
    topology = Topology(
        tmp_path,
        metrics_port=str(metrics_port),
        metrics_refresh_s="0.5",
        input_wait_threshold_s="1",
        stalled_after_s="1",
        temporal_ui_url="https://temporal.example.com/",
    )
    started = time.time()
    try:
        topology.temporal.start()
        await topology.temporal.wait_ready()
        topology.worker.start()
        topology.server.start()
        # Readiness without /readyz: the background refresh sets the gauge.
        first = await until_scraped(
            metrics_port,
            60,
            lambda s: (
                value(s, "mcp_tasks_ready") == 1 and value(s, "mcp_tasks_workers_polling") == 1
            ),
            "mcp_tasks_ready 1 and a worker polling, with nothing calling /readyz",
        )
        info = {
            "namespace": "default",
            "task_queue": topology.task_queue,
            "temporal_ui_url": "https://temporal.example.com",
        }
        assert value(first, "mcp_tasks_deployment_info", **info) == 1
        # Another deployment's waiting task in the same namespace (its own task queue, no
        # worker here): this server's gauges must not count it.
        temporal = await Client.connect(topology.temporal.address)
        theirs = TypedSearchAttributes(
            [
                SearchAttributePair(
                    SearchAttributeKey.for_keyword(SEARCH_ATTRIBUTE_TOOL), "request_approval"
                ),
                SearchAttributePair(
                    SearchAttributeKey.for_keyword(SEARCH_ATTRIBUTE_STATUS), "input_required"
                ),
            ]
        )
        other = await temporal.start_workflow(
            "RequestApproval",
            id=f"other-{uuid.uuid4()}",
            task_queue="other-team",
            search_attributes=theirs,
        )
        async with httpx.AsyncClient(timeout=30) as http:
            mcp = McpClient(http, topology.url)
            asked = await mcp.create_task("request_approval", {"message": "Ship it?"})
            await mcp.create_task("multi_step_job", {"steps": 1, "step_seconds": 120})
            await mcp.wait_status(asked, "input_required", within=30)

        def moved(samples: Samples) -> bool:
            refreshed = value(samples, "mcp_tasks_visibility_refreshed_timestamp_seconds")
            waiting = value(
                samples, "mcp_tasks_open_tasks", tool="request_approval", status="input_required"
            )
            late = value(samples, "mcp_tasks_input_waits_over_threshold", tool="request_approval")
            stalled = value(samples, "mcp_tasks_stalled_tasks", tool="multi_step_job")
            return (
                (waiting or 0) >= 1
                and (late or 0) >= 1
                and (stalled or 0) >= 1
                and (refreshed or 0) > started
            )

        samples = await until_scraped(
            metrics_port, 60, moved, "the waiting and stalled gauges on the metrics port"
        )
        assert (value(samples, "mcp_tasks_visibility_refreshes_total", outcome="ok") or 0) >= 1
        # Ours only: the other queue's wait is in the same namespace, and visible.
        waiting = {"tool": "request_approval", "status": "input_required"}
        assert value(samples, "mcp_tasks_open_tasks", **waiting) == 1
        query = 'McpStatus="input_required" AND ExecutionStatus="Running"'
        assert (await temporal.count_workflows(query)).count == 2
        await other.terminate()
    finally:
        topology.stop()
