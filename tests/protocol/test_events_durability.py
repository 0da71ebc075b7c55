"""The issue's proof that a client-subscribed event survives crashes: Temporal, `mcp-tasks
server` and `mcp-tasks worker` as three processes (tests/crash_topology.py). The client
subscribes (its receiver answers the handshake), the receiver goes down, a task asks its
question, the delivery fails; then the worker and Temporal are killed with SIGKILL and started
again, the task completes, and only then the receiver comes back. It must get exactly one
verified delivery per event (at least once on the wire, deduplicated by webhook-id), with the
event id it had before the crashes. Slow: real processes are what a kill -9 needs."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from mcp_server.runtime.devserver import free_port
from mcp_server.runtime.tokens import add_token
from tests.crash_topology import Topology
from tests.event_receiver import EventReceiver, new_secret, self_signed
from tests.mcp_client import McpClient

pytestmark = pytest.mark.slow

APPROVE = {"decision": {"action": "accept", "content": {"decision": "approve"}}}


async def deliveries_of(client: Client, subscriptions_workflow: str) -> list[str]:
    """The delivery workflow ids the subscriptions workflow has started, from its history."""
    ids = []
    async for event in client.get_workflow_handle(subscriptions_workflow).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
            attributes = event.child_workflow_execution_started_event_attributes
            ids.append(attributes.workflow_execution.workflow_id)
    return ids


async def until_failed(client: Client, parent: str, count: int, within: float) -> list[str]:
    """The delivery ids once `count` have started and each has failed at least once."""
    deadline = time.monotonic() + within
    while True:
        try:
            ids = await deliveries_of(client, parent)
        except Exception:  # Temporal still coming back
            ids = []
        if len(ids) >= count:
            attempts = []
            for delivery in ids:
                pending = (
                    await client.get_workflow_handle(delivery).describe()
                ).raw_description.pending_activities
                attempts.append(pending[0].attempt if pending else 0)
            if all(attempt >= 2 for attempt in attempts):
                return ids
        assert time.monotonic() < deadline, f"{count} deliveries did not fail within {within} s"
        await asyncio.sleep(0.2)


async def test_a_delivery_survives_kill_9_of_the_worker_and_of_temporal(tmp_path: Path) -> None:
    certificate = self_signed(tmp_path)
    receiver = EventReceiver(free_port(), certificate, new_secret())
    tokens = tmp_path / "tokens.json"
    alice = add_token(tokens, "alice", [])
    topology = Topology(
        tmp_path / "topology",
        auth="tokens",
        tokens_file=str(tokens),
        events_allow_private_addresses="true",
        events_ca_file=str(certificate[0]),
        events_max_subscriptions="20",
    )
    try:
        await topology.start()
        async with httpx.AsyncClient(timeout=30) as http:
            mcp = McpClient(http, topology.url)
            mcp.extra_headers = {"Authorization": f"Bearer {alice}"}
            await scenario(topology, mcp, receiver)
    finally:
        receiver.stop()
        topology.stop()


async def scenario(topology: Topology, mcp: McpClient, receiver: EventReceiver) -> None:
    receiver.start()  # up for the handshakes only
    delivery = {"mode": "webhook", "url": receiver.url, "secret": receiver.secret}
    for name in ("task.input_required", "task.completed"):
        reply = await mcp.rpc("events/subscribe", {"name": name, "delivery": delivery})
        assert "result" in reply.body, reply.body
    receiver.stop()
    temporal = await Client.connect(topology.temporal.address)
    parent = (
        await temporal.list_workflows('WorkflowType = "McpEventSubscriptions"').__anext__()
    ).id
    task_id = await mcp.create_task("request_approval", {"message": "Ship it?"})
    await mcp.wait_status(task_id, "input_required", within=15)
    (asked,) = await until_failed(temporal, parent, 1, within=30)
    topology.kill("worker")
    topology.kill("temporal")
    topology.temporal.start()  # the same port and data (its readiness needs no worker)
    await topology.temporal.wait_ready()
    await topology.start_part("worker")
    temporal = await Client.connect(topology.temporal.address)
    await mcp.update_task(task_id, APPROVE)
    await mcp.wait_status(task_id, "completed", within=30)
    await until_failed(temporal, parent, 2, within=30)  # the completion's too
    assert not receiver.events  # nothing could arrive so far
    receiver.start()
    await receiver.wait_for(lambda r: len(r.unique()) == 2, 90, "both deliveries")
    assert receiver.names() == ["task.completed", "task.input_required"]
    assert not receiver.refused
    by_name = {e.body["name"]: e for e in receiver.unique().values()}
    # The event id the delivery had before the crashes (the child's id ends with it).
    assert asked.endswith("." + by_name["task.input_required"].webhook_id)
    assert set(await deliveries_of(temporal, parent)) == {
        f"{e.subscription_id}.{e.webhook_id}" for e in receiver.unique().values()
    }
    assert by_name["task.completed"].body["data"]["status"] == "completed"
