"""The attack: a task whose questions total over ~2 MB. Temporal refused the memo that
publishes them, so the workflow task failed on every attempt: the task stayed `working`
forever and could not even be cancelled. Now the question is refused as it is asked
(workflows/input_limits.py): the task fails at once with a clear message, or the tool catches
the refusal and asks something smaller."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_server.tools.loading import load_toolsets
from tests.conftest import Stack, running_stack
from workflows.input_limits import MAX_MEMO_BYTES

TOO_LARGE = 2_500_000  # over Temporal's 2 MiB memo cap: the size that poisoned the workflow


@pytest.fixture(scope="module")
async def asking(temporal_client: Client) -> AsyncIterator[Stack]:
    registry = load_toolsets("demo", ["tests.large_question_tool"])
    async with running_stack(temporal_client, registry) as stack:
        yield stack


async def test_a_question_too_large_to_store_fails_the_task_at_once_with_a_clear_error(
    asking: Stack,
) -> None:
    mcp = asking.mcp
    task_id = await mcp.create_task("tests_ask_large", {"bytes": TOO_LARGE})
    task = await mcp.wait_terminal(task_id, within=30)
    assert task["status"] == "failed", task
    assert f"above the {MAX_MEMO_BYTES:,}-byte limit" in task["statusMessage"]
    handle = asking.client.get_workflow_handle(task_id)
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED


async def test_a_tool_that_catches_the_refusal_asks_something_smaller(asking: Stack) -> None:
    mcp = asking.mcp
    task_id = await mcp.create_task("tests_ask_large", {"bytes": TOO_LARGE, "fallback": True})
    task = await mcp.wait_status(task_id, "input_required", within=30)
    assert list(task["inputRequests"]) == ["small"]
    await mcp.cancel_task(task_id)
    assert (await mcp.wait_terminal(task_id, within=30))["status"] == "cancelled"


async def test_a_question_under_the_limit_is_asked_as_before(asking: Stack) -> None:
    mcp = asking.mcp
    task_id = await mcp.create_task("tests_ask_large", {"bytes": MAX_MEMO_BYTES // 2})
    task = await mcp.wait_status(task_id, "input_required", within=30)
    assert list(task["inputRequests"]) == ["large"]
    await mcp.cancel_task(task_id)
