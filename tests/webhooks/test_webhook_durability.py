"""The issue's proof of durable webhooks: Temporal, `mcp-tasks server` and `mcp-tasks worker` as
three processes (tests/crash_topology.py); the worker is killed with SIGKILL while the
receiver is down, started again, and only then the receiver comes back. It must end with
exactly one verified delivery per event (at least once on the wire, deduplicated by the
delivery id), and a delivery id that stayed the same through the crash."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from mcp_server.runtime.devserver import free_port
from tests.crash_topology import Topology
from tests.mcp_client import McpClient
from tests.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.slow

SECRET = "the-durability-test-webhook-secret"
APPROVE = {"decision": {"action": "accept", "content": {"decision": "approve"}}}


async def deliveries_of(client: Client, task_id: str) -> list[str]:
    """The delivery ids (child workflow ids) the task has started, from its history."""
    ids = []
    async for event in client.get_workflow_handle(task_id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
            attributes = event.child_workflow_execution_started_event_attributes
            ids.append(attributes.workflow_execution.workflow_id)
    return ids


async def failed_attempts(client: Client, delivery_id: str) -> int:
    """How many attempts of the delivery's POST have failed so far."""
    description = await client.get_workflow_handle(delivery_id).describe()
    pending = description.raw_description.pending_activities
    return pending[0].attempt - 1 if pending else 0


async def until_failed(client: Client, task_id: str, count: int, within: float) -> list[str]:
    """The task's delivery ids once it has started `count` and each has failed at least once
    (the receiver is down)."""
    deadline = time.monotonic() + within
    while True:
        ids = await deliveries_of(client, task_id)
        if len(ids) >= count and all([await failed_attempts(client, i) >= 1 for i in ids]):
            return ids
        assert time.monotonic() < deadline, f"{count} deliveries did not fail within {within} s"
        await asyncio.sleep(0.2)


def scraped(port: int, name: str, outcome: str) -> float:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name + "{") and f'outcome="{outcome}"' in line
    )


async def test_a_worker_killed_while_the_receiver_is_down_loses_and_doubles_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver = WebhookReceiver(free_port(), SECRET)  # down: nothing listens on its port yet
    hooks = tmp_path / "webhooks.json"
    endpoint = {
        "id": "ops",
        "url": receiver.url,
        "secret_env": "OPS_WEBHOOK_SECRET",
        "events": ["input_required", "completed"],
    }
    hooks.write_text(json.dumps([endpoint]))
    monkeypatch.setenv("OPS_WEBHOOK_SECRET", SECRET)  # the worker process inherits it
    metrics_port = free_port()
    topology = Topology(
        tmp_path / "topology", webhooks_file=str(hooks), public_url="https://mcp.example.com"
    )
    # The worker's SDK metrics on a port of its own (the server would bind it too).
    topology.worker.env = {
        **topology.worker.env,
        "MCP_TASKS_WORKER_METRICS_PORT": str(metrics_port),
    }
    try:
        await topology.start()
        async with httpx.AsyncClient(timeout=30) as http:
            await scenario(topology, McpClient(http, topology.url), receiver, metrics_port)
    finally:
        topology.stop()


async def scenario(
    topology: Topology, mcp: McpClient, receiver: WebhookReceiver, metrics_port: int
) -> None:
    temporal = await Client.connect(topology.temporal.address)
    task_id = await mcp.create_task("request_approval", {"message": "Ship it?"})
    await mcp.wait_status(task_id, "input_required", within=15)
    asked = await until_failed(temporal, task_id, 1, within=20)
    topology.kill("worker")
    await mcp.update_task(task_id, APPROVE)  # kept by Temporal while no worker runs
    await topology.start_part("worker")
    await mcp.wait_status(task_id, "completed", within=30)
    await until_failed(temporal, task_id, 2, within=20)  # the completion's too
    assert not receiver.deliveries  # nothing could arrive so far
    receiver.start()
    try:
        await receiver.wait_for(lambda r: len(r.unique()) == 2, 60, "both deliveries")
    finally:
        receiver.stop()
    assert receiver.events() == ["completed", "input_required"]
    assert not receiver.refused
    by_event = {d.body["event"]: d for d in receiver.unique().values()}
    assert by_event["input_required"].id == asked[0]  # the id it had before the crash
    assert set(await deliveries_of(temporal, task_id)) == set(receiver.unique())
    assert by_event["completed"].body["task"]["status"] == "completed"
    assert by_event["completed"].body["inboxUrl"].endswith(f"/inbox/tasks/{task_id}")
    # The worker's metrics (the restarted worker's: it made every attempt since).
    metric = "mcp_tasks_webhook_deliveries_total"
    assert scraped(metrics_port, metric, "delivered") >= 2
    assert scraped(metrics_port, metric, "failed") >= 1
