"""Eager workflow start in `mcp-tasks dev`: a create asks Temporal to hand the new task's first
workflow task straight to the worker of the same process (tasks/store.py), and Temporal records
whether it did in the history's first event. `MCP_TASKS_EAGER_START=0` turns it off."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from mcp_server.runtime.devserver import free_port
from tests.dev_process import DevProcess, client_for, reaped


async def first_event_eager(temporal_port: int, task_id: str) -> bool:
    client = await Client.connect(f"127.0.0.1:{temporal_port}")
    history = await client.get_workflow_handle(task_id).fetch_history()
    started = history.events[0]
    assert started.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
    return started.workflow_execution_started_event_attributes.eager_execution_accepted


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["1", "0"])
async def test_a_create_in_dev_is_started_eagerly_on_its_own_worker(
    tmp_path: Path, setting: str
) -> None:
    port, temporal_port = free_port(), free_port()
    dev = DevProcess(tmp_path / "data", port, temporal_port, env={"MCP_TASKS_EAGER_START": setting})
    with reaped([dev]):
        async with client_for(port) as mcp:
            await dev.wait_healthy(mcp.http)
            task_id = await mcp.create_task("confirm_delete", {"filename": "eager.txt"})
            await mcp.wait_status(task_id, "input_required", within=10)
            assert await first_event_eager(temporal_port, task_id) is (setting == "1")
            # Eager or not, the task is the same: it asks, takes the answer and completes.
            await mcp.update_task(
                task_id, {"confirm": {"action": "accept", "content": {"confirm": True}}}
            )
            done = await mcp.wait_status(task_id, "completed", within=10)
            assert done["status"] == "completed"


@pytest.mark.slow
async def test_concurrent_creates_are_not_all_started_eagerly(tmp_path: Path) -> None:
    """Eager start is asked for only while no other start of the process is in flight: a
    burst of creates gets ordinary starts, which measured about half the p50 of eager ones
    at 16 clients (docs/benchmarks.md). Without that gate every start here would be eager
    (the worker has free slots for all of them)."""
    port, temporal_port = free_port(), free_port()
    dev = DevProcess(tmp_path / "data", port, temporal_port)
    with reaped([dev]):
        async with client_for(port) as mcp:
            await dev.wait_healthy(mcp.http)
            alone = await mcp.create_task("confirm_delete", {"filename": "alone.txt"})
            burst = await asyncio.gather(
                *(mcp.create_task("confirm_delete", {"filename": f"b{i}.txt"}) for i in range(12))
            )
            eager = [await first_event_eager(temporal_port, t) for t in burst]
            assert await first_event_eager(temporal_port, alone)
            assert not all(eager), eager
            for task_id in [alone, *burst]:  # eager or not, every task runs to its question
                await mcp.wait_status(task_id, "input_required", within=20)
