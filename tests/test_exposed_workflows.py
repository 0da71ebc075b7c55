"""Existing Temporal workflows as MCP tools, with no change to them (their worker is the user's)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.worker import Worker

from tests.mcp_client import McpClient
from tests.user_workflows import USERS_TASK_QUEUE, AddNumbers, PlaceOrder


@pytest.fixture(scope="module", autouse=True)
async def users_worker(temporal_client: Client) -> AsyncIterator[None]:
    """The user's own worker: it knows their workflows and nothing of this server."""
    async with Worker(
        temporal_client, task_queue=USERS_TASK_QUEUE, workflows=[PlaceOrder, AddNumbers]
    ):
        yield


async def test_the_workflow_runs_as_a_task_and_its_result_is_mapped(
    mcp: McpClient, temporal_client: Client
) -> None:
    task_id = await mcp.create_task("place_order", {"item": "book"})
    done = await mcp.wait_terminal(task_id)
    assert done["result"]["structuredContent"] == {"id": "r-book", "item": "book"}
    assert done["result"]["isError"] is False
    child = await temporal_client.get_workflow_handle(f"{task_id}-TestsPlaceOrder").describe()
    assert child.workflow_type == "TestsPlaceOrder" and child.task_queue == USERS_TASK_QUEUE


async def test_positional_arguments_and_a_plain_result(mcp: McpClient) -> None:
    done = await mcp.wait_terminal(await mcp.create_task("add_numbers", {"a": 2, "b": 3}))
    assert done["result"]["structuredContent"] == {"result": 5}
    assert done["result"]["content"][0]["text"] == "5"


async def test_a_workflow_failure_is_an_is_error_result(mcp: McpClient) -> None:
    done = await mcp.wait_terminal(
        await mcp.create_task("place_order", {"item": "x", "fail": True})
    )
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert "card declined" in done["result"]["content"][0]["text"]


async def test_cancelling_the_task_cancels_the_users_workflow(
    mcp: McpClient, temporal_client: Client
) -> None:
    task_id = await mcp.create_task("place_order", {"item": "slow", "seconds": 60})
    running = await mcp.wait_for(task_id, lambda t: "TestsPlaceOrder" in t.get("statusMessage", ""))
    assert running["status"] == "working"
    await mcp.cancel_task(task_id)
    assert (await mcp.wait_terminal(task_id))["status"] == "cancelled"
    child = await temporal_client.get_workflow_handle(f"{task_id}-TestsPlaceOrder").describe()
    assert child.status == WorkflowExecutionStatus.CANCELED
