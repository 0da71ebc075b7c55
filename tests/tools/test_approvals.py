"""`request_approval`: a decision that may take days, on real Temporal."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from temporalio.testing import WorkflowEnvironment

from mcp_server.tools.request_approval import MAX_DEADLINE_S
from mcp_tasks.identity import ANONYMOUS
from tests.conftest import StackFactory
from tests.mcp_client import NO_CAPABILITIES, McpClient
from tests.time_skipping import task_input, worker_of_its_own
from workflows.request_approval import RequestApprovalWorkflow


async def output_schema(mcp: McpClient) -> Draft202012Validator:
    tools = {t["name"]: t for t in (await mcp.rpc("tools/list")).result["tools"]}
    return Draft202012Validator(tools["request_approval"]["outputSchema"])


@pytest.mark.parametrize(("choice", "decision"), [("approve", "approved"), ("reject", "rejected")])
async def test_a_decision_completes_the_task_with_who_decided_and_why(
    mcp: McpClient, choice: str, decision: str
) -> None:
    created = (
        await mcp.call_tool("request_approval", {"message": "Ship 1.2?", "require_reason": True})
    ).result
    assert created["ttlMs"] > MAX_DEADLINE_S * 1000  # the TTL outlives any deadline
    waiting = await mcp.wait_status(created["taskId"], "input_required", within=5)
    form = waiting["inputRequests"]["decision"]["params"]
    assert form["message"] == "Ship 1.2?" and form["requestedSchema"]["required"] == [
        "decision",
        "reason",
    ]
    answer = {"action": "accept", "content": {"decision": choice, "reason": "tests are green"}}
    await mcp.update_task(created["taskId"], {"decision": answer})
    done = await mcp.wait_terminal(created["taskId"])
    result = done["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["decision"] == decision
    assert result["structuredContent"]["reason"] == "tests are green"
    assert result["structuredContent"]["decidedBy"] == ANONYMOUS.digest
    (await output_schema(mcp)).validate(result["structuredContent"])


async def test_nobody_deciding_before_the_deadline_resolves_as_expired(mcp: McpClient) -> None:
    task_id = await mcp.create_task(
        "request_approval", {"message": "Quick?", "deadline_seconds": 1}
    )
    waiting = await mcp.wait_status(task_id, "input_required", within=5)
    assert "until" in waiting["statusMessage"]
    done = await mcp.wait_terminal(task_id, within=10)
    assert done["result"]["structuredContent"]["decision"] == "expired"
    assert done["result"]["structuredContent"]["waitedSeconds"] >= 1


async def test_a_dismissed_form_is_not_a_decision(mcp: McpClient) -> None:
    task_id = await mcp.create_task("request_approval", {"message": "Hm?"})
    await mcp.wait_status(task_id, "input_required", within=5)
    await mcp.update_task(task_id, {"decision": {"action": "cancel"}})
    done = await mcp.wait_terminal(task_id)
    assert done["result"]["structuredContent"]["decision"] == "dismissed"


async def test_an_answer_to_an_evicted_approval_replays_it_from_history(
    fresh_stack: StackFactory,
) -> None:
    # No workflow cache at all: every wake-up replays the history, so a waiting approval
    # holds no worker memory; restarting the worker in between changes nothing.
    async with fresh_stack(max_cached_workflows=0) as stack:
        mcp = stack.mcp
        task_id = await mcp.create_task("request_approval", {"message": "Later?"})
        await mcp.wait_status(task_id, "input_required", within=5)
        await stack.stop_worker()
        await stack.start_worker()
        answer: dict[str, Any] = {"action": "accept", "content": {"decision": "approve"}}
        await mcp.update_task(task_id, {"decision": answer})
        done = await mcp.wait_terminal(task_id)
        assert done["result"]["structuredContent"]["decision"] == "approved"


async def test_a_deadline_beyond_the_ttl_is_refused(mcp: McpClient) -> None:
    reply = await mcp.call_tool(
        "request_approval", {"message": "x", "deadline_seconds": MAX_DEADLINE_S + 1}
    )
    assert reply.error["code"] == -32602


async def test_a_waiting_approval_can_be_cancelled(mcp: McpClient) -> None:
    task_id = await mcp.create_task("request_approval", {"message": "Never mind?"})
    await mcp.wait_status(task_id, "input_required", within=5)
    await mcp.cancel_task(task_id)
    cancelled = await mcp.wait_terminal(task_id)
    assert cancelled["status"] == "cancelled" and "inputRequests" not in cancelled


async def test_a_2026_host_without_tasks_gets_the_approval_done_through_the_follow_up_tools(
    mcp: McpClient,
) -> None:
    """No tasks extension, no elicitation: the call returns the follow-up at once (the question
    cannot travel on a 2026-07-28 call), and ordinary tools finish the approval later."""
    started = await mcp.call_tool(
        "request_approval", {"message": "Ship 1.3?"}, capabilities=NO_CAPABILITIES
    )
    follow_up = started.result["structuredContent"]
    assert follow_up["status"] == "input_required" and started.result["isError"] is False
    assert (await output_schema(mcp)).is_valid(follow_up)
    task_id = follow_up["taskId"]
    status = await mcp.call_tool("task_status", {"taskId": task_id}, capabilities=NO_CAPABILITIES)
    assert "Ship 1.3?" in status.result["content"][0]["text"]
    answer = {"taskId": task_id, "action": "accept", "content": {"decision": "approve"}}
    responded = await mcp.call_tool("task_respond", answer, capabilities=NO_CAPABILITIES)
    assert responded.result["isError"] is False, responded.result
    for _ in range(100):
        done = await mcp.call_tool("task_status", {"taskId": task_id}, capabilities=NO_CAPABILITIES)
        if (done.result.get("structuredContent") or {}).get("decision"):
            break
        await asyncio.sleep(0.1)
    assert done.result["structuredContent"]["decision"] == "approved"
    assert (await output_schema(mcp)).is_valid(done.result["structuredContent"])


# ----- the deadline under time skipping: days of waiting in no wall-clock time ---------------


async def test_a_deadline_of_days_expires_the_approval_when_nobody_decides(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    three_days = 3 * 24 * 3600
    task = task_input("request_approval", {"message": "Ship?", "deadline_seconds": three_days})
    async with worker_of_its_own(time_skipping_env, [RequestApprovalWorkflow]) as queue:
        outcome = await time_skipping_env.client.execute_workflow(
            RequestApprovalWorkflow.run,  # type: ignore[attr-defined]
            task,
            id=task.task_id,
            task_queue=queue,
            execution_timeout=timedelta(seconds=60 + three_days),
        )
    assert outcome["structuredContent"]["decision"] == "expired"
    assert outcome["structuredContent"]["waitedSeconds"] >= three_days
