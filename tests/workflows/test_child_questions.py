"""The task side of the interactive contract (workflows/child_questions.py, workflows/exposed.py)
with the Python helper (sdk/python) on the child's side, under time skipping: a worker of its
own runs ExposedWorkflow and the team's workflows of tests/interactive_children.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from activities.exposed import probe_child
from mcp_tasks.contracts.interactive import PAUSE_SIGNAL, RESUME_SIGNAL, STEER_SIGNAL
from mcp_tasks.contracts.task_state import MEMO_KEY, SUBMIT_INPUT_SIGNAL, SubmitInput, TaskState
from tests.interactive_children import AskBadly, AskTwice, AskWithTimeout, Steered
from tests.time_skipping import task_input, worker_of_its_own
from workflows.exposed import ExposedWorkflow

CHILDREN = [AskTwice, AskBadly, AskWithTimeout, Steered]
YES = {"action": "accept", "content": {"approve": True}}


@pytest.fixture
async def queue(time_skipping_env: WorkflowEnvironment) -> AsyncIterator[str]:
    workflows = [ExposedWorkflow, *CHILDREN]
    async with worker_of_its_own(time_skipping_env, workflows, [probe_child]) as name:
        yield name


async def start(
    env: WorkflowEnvironment,
    queue: str,
    child_type: str,
    arguments: dict[str, Any] | None = None,
    **fields: Any,
) -> WorkflowHandle[Any, Any]:
    config: dict[str, Any] = {
        "workflow": child_type,
        "task_queue": queue,
        "positional": [],
        "result_path": None,
    }
    task = task_input("exposed", arguments or {}, tool_config=config, **fields)
    return await env.client.start_workflow(
        "ExposedWorkflow", task, id=task.task_id, task_queue=queue
    )


async def memo_until(
    handle: WorkflowHandle[Any, Any], holds: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The task's published state, once `holds` is true of it (bounded)."""
    async with asyncio.timeout(20):
        while True:
            state = await (await handle.describe()).memo_value(MEMO_KEY, {})
            if state and holds(state):
                return dict(state)
            await asyncio.sleep(0.1)


def asking(key: str) -> Callable[[dict[str, Any]], bool]:
    return lambda state: key in state["inputRequests"]


async def test_reports_reach_the_memo_and_a_reused_key_is_renamed_and_answered_back(
    time_skipping_env: WorkflowEnvironment, queue: str
) -> None:
    handle = await start(time_skipping_env, queue, "TestsAskTwice")
    first = await memo_until(handle, asking("approve"))
    assert first["progress"] == {"progress": 1, "total": 4}
    assert first["statusMessage"] == "First?"
    await handle.signal(SUBMIT_INPUT_SIGNAL, SubmitInput({"approve": YES}, by="alice"))
    second = await memo_until(handle, asking("approve-2"))
    assert second["progress"] == {"progress": 0.5, "total": 1}
    await handle.signal(SUBMIT_INPUT_SIGNAL, SubmitInput({"approve-2": YES}, by="bob"))
    result = await handle.result()
    assert result["structuredContent"] == {"first": True, "second": True, "by": "bob"}


async def test_a_webhook_of_the_question_tells_how_far_the_task_reported_it_is(
    time_skipping_env: WorkflowEnvironment, queue: str
) -> None:
    webhooks = [{"endpoint": "hooks", "events": ["input_required"]}]
    handle = await start(time_skipping_env, queue, "TestsAskTwice", webhooks=webhooks)
    await memo_until(handle, asking("approve"))
    run = (await handle.describe()).run_id
    delivery = await delivery_input(time_skipping_env, f"{handle.id}.webhook.{run}.1")
    assert delivery["event"] == "input_required"
    assert delivery["task"]["progress"] == {"progress": 1, "total": 4}
    assert delivery["task"]["statusMessage"] == "First?"
    await handle.signal(SUBMIT_INPUT_SIGNAL, SubmitInput({"approve": YES}, by="alice"))
    await memo_until(handle, asking("approve-2"))
    second = await delivery_input(time_skipping_env, f"{handle.id}.webhook.{run}.2")
    assert second["task"]["progress"] == {"progress": 0.5, "total": 1}
    await handle.signal(SUBMIT_INPUT_SIGNAL, SubmitInput({"approve-2": YES}, by="bob"))
    await handle.result()


async def delivery_input(env: WorkflowEnvironment, delivery_id: str) -> dict[str, Any]:
    """The input the task started a webhook delivery with (its child's first event); no worker
    here runs deliveries, so the child only waits."""
    child = env.client.get_workflow_handle(delivery_id)
    async with asyncio.timeout(20):
        while True:
            try:
                history = await child.fetch_history()
                break
            except RPCError:  # not started yet
                await asyncio.sleep(0.1)
    started = history.events[0].workflow_execution_started_event_attributes
    delivery: dict[str, Any] = json.loads(started.input.payloads[0].data)
    return delivery


async def test_an_invalid_input_request_is_answered_with_an_error_and_the_task_never_waits(
    time_skipping_env: WorkflowEnvironment, queue: str
) -> None:
    handle = await start(time_skipping_env, queue, "TestsAskBadly")
    result = await handle.result()
    # The child's CallToolResult is the tool's result as it is.
    assert result["content"][0]["text"].startswith("refused: input request 'x': method must be")
    assert result["structuredContent"] == {"timedOut": False} and result["isError"] is False
    history = await handle.fetch_history()
    assert b"input_required" not in history.to_json().encode()


async def test_invalid_approvers_are_answered_with_an_error_naming_the_problem(
    time_skipping_env: WorkflowEnvironment, queue: str
) -> None:
    handle = await start(time_skipping_env, queue, "TestsAskBadly", {"approvers": [" "]})
    result = await handle.result()
    text = result["content"][0]["text"]
    assert text == "refused: every approver must be a non-empty string", text


async def test_a_question_nobody_answers_in_time_is_withdrawn_and_a_tool_error_maps(
    time_skipping_env: WorkflowEnvironment, queue: str
) -> None:
    handle = await start(time_skipping_env, queue, "TestsAskWithTimeout")
    result = await handle.result()
    assert result["isError"] is True
    assert result["content"][0]["text"] == (
        "gave up: no answer within 1 s: the question was withdrawn"
    )
    assert result["structuredContent"] == {"timedOut": True}


async def test_steer_messages_arrive_in_order_and_a_pause_holds_at_the_safe_point(
    time_skipping_env: WorkflowEnvironment, queue: str
) -> None:
    handle = await start(time_skipping_env, queue, "TestsSteered")
    await memo_until(handle, lambda state: "TestsSteered" in (state["statusMessage"] or ""))
    child = time_skipping_env.client.get_workflow_handle(f"{handle.id}-TestsSteered")
    # The memo names the child in the workflow task that starts it: the child itself exists a
    # moment later.
    async with asyncio.timeout(20):
        while True:
            if await exists(child):
                break
            await asyncio.sleep(0.1)
    await child.signal(PAUSE_SIGNAL, {"v": 1})
    await child.signal(STEER_SIGNAL, {"v": 1, "seq": 2, "message": "b"})
    await child.signal(STEER_SIGNAL, {"v": 1, "seq": 1, "message": "a"})
    async with asyncio.timeout(20):
        while True:
            if await paused_told(child):
                break
            await asyncio.sleep(0.1)
    await child.signal(RESUME_SIGNAL, {"v": 1})
    await child.signal(STEER_SIGNAL, {"v": 1, "seq": 3, "message": "c"})
    assert (await handle.result())["structuredContent"] == {"received": ["a", "b", "c"]}


async def exists(handle: WorkflowHandle[Any, Any]) -> bool:
    try:
        await handle.describe()
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return False
    return True


async def paused_told(child: WorkflowHandle[Any, Any]) -> bool:
    """Whether the child has told its task it holds (an `mcp.paused` signal sent)."""
    history = await child.fetch_history()
    return any(
        event.signal_external_workflow_execution_initiated_event_attributes.signal_name
        == "mcp.paused"
        for event in history.events
        if event.HasField("signal_external_workflow_execution_initiated_event_attributes")
    )


def test_progress_is_in_the_memo_only_when_reported_and_reads_back() -> None:
    state = TaskState.initial(task_input("t", {}), "Queued")
    assert "progress" not in state.to_memo()
    reported = replace(state, progress={"progress": 2, "total": 3})
    assert reported.to_memo()["progress"] == {"progress": 2, "total": 3}
    assert TaskState.from_memo(reported.to_memo()) == reported
    malformed = {**state.to_memo(), "progress": {"total": 3, "progress": "2"}}
    assert TaskState.from_memo(malformed) == state
