"""Steering a running task (`mcp-tasks-temporal/steer`, `/pause`, `/resume`): a built-in tool
that opts in (multi_step_job), a team's exposed workflow that opts in (the relay to its child),
and every refusal with its code. Real Temporal (the session's dev server), real HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_server.protocol.core.client_view import STEERING_EXTENSION
from mcp_server.protocol.frame import errors
from mcp_server.tools.exposed import load
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.contracts.task_state import (
    STATE_QUERY,
    SUBMIT_INPUT_SIGNAL,
    AuditStamp,
    SubmitInput,
    TaskInput,
    TaskState,
)
from tests.mcp_client import TASKS, TASKS_AND_ELICITATION, McpClient
from tests.steered_workflows import (
    STEERED_TASK_QUEUE,
    STEERED_TOML,
    SteeredAcrossRuns,
    SteeredRollout,
)
from workflows.steering import PAUSE_SIGNAL, RESUME_SIGNAL, STEER_SIGNAL, SteerInput

STEERING: dict[str, Any] = {
    **TASKS_AND_ELICITATION,
    "extensions": {**TASKS["extensions"], STEERING_EXTENSION: {}},
}
STEER, PAUSE, RESUME = (f"mcp-tasks-temporal/{verb}" for verb in ("steer", "pause", "resume"))
APPROVE = {"action": "accept", "content": {"approve": True}}


async def steer(mcp: McpClient, task_id: str, message: str, **kwargs: Any) -> Any:
    kwargs.setdefault("capabilities", STEERING)
    params = {"taskId": task_id, "message": message}
    return await mcp.rpc(STEER, params, headers={"Mcp-Name": task_id}, **kwargs)


async def control(mcp: McpClient, method: str, task_id: str, **kwargs: Any) -> Any:
    kwargs.setdefault("capabilities", STEERING)
    return await mcp.rpc(method, {"taskId": task_id}, headers={"Mcp-Name": task_id}, **kwargs)


async def status(mcp: McpClient, task_id: str, capabilities: dict[str, Any]) -> str:
    return str((await mcp.get_task(task_id, capabilities=capabilities)).result["status"])


async def test_server_discover_offers_the_steering_extension(mcp: McpClient) -> None:
    discovered = (await mcp.rpc("server/discover")).result
    assert STEERING_EXTENSION in discovered["capabilities"]["extensions"]


async def test_a_paused_job_holds_at_a_safe_point_and_reads_its_steer_messages_in_order(
    mcp: McpClient,
) -> None:
    """`paused` only to a client that declared the extension; the others see `working`."""
    task_id = await mcp.create_task(
        "multi_step_job", {"require_approval": True, "steps": 2, "step_seconds": 0.1}
    )
    await mcp.wait_status(task_id, "input_required", within=10)
    paused = await control(mcp, PAUSE, task_id)
    assert paused.status == 200 and paused.result["resultType"] == "complete"
    for text in ("use the blue pool", "then drain the green one"):
        assert (await steer(mcp, task_id, text)).result["resultType"] == "complete"
    assert (await mcp.update_task(task_id, {"approve": APPROVE})).status == 200
    # Held at the first step boundary: the job says so, and runs no step while paused.
    held = await wait_message(mcp, task_id, "Paused:")
    assert held["status"] == "working"  # a client that did not declare the extension
    assert await status(mcp, task_id, STEERING) == "paused"
    again = await control(mcp, PAUSE, task_id)
    assert (
        again.error["code"] == errors.ALREADY_PAUSED and "already paused" in again.error["message"]
    )
    resumed = await control(mcp, RESUME, task_id)
    assert resumed.status == 200
    done = await mcp.wait_terminal(task_id, within=20)
    steered = done["result"]["structuredContent"]["steering"]
    assert steered == [
        {"seq": 1, "message": "use the blue pool", "beforeStep": 1},
        {"seq": 2, "message": "then drain the green one", "beforeStep": 1},
    ]
    assert [s["step"] for s in done["result"]["structuredContent"]["steps"]] == [1, 2]
    ended = await control(mcp, RESUME, task_id)
    assert ended.error["code"] == errors.TASK_ENDED and "has ended" in ended.error["message"]


async def wait_status_seen_by(
    mcp: McpClient, task_id: str, wanted: str, capabilities: dict[str, Any]
) -> None:
    """tasks/get as a client declaring `capabilities` until it shows `wanted` (bounded)."""
    deadline = time.monotonic() + 10
    seen = await status(mcp, task_id, capabilities)
    while seen != wanted:
        assert time.monotonic() < deadline, f"{task_id} still {seen}, not {wanted}"
        await asyncio.sleep(0.1)
        seen = await status(mcp, task_id, capabilities)


async def wait_message(mcp: McpClient, task_id: str, prefix: str) -> dict[str, Any]:
    """tasks/get (as a client without the steering extension) until the statusMessage starts
    with `prefix`."""
    return await mcp.wait_for(
        task_id, lambda t: str(t.get("statusMessage", "")).startswith(prefix), within=10
    )


async def test_each_method_is_refused_where_it_does_not_apply_with_its_code(
    mcp: McpClient,
) -> None:
    unknown = "mcp-task-" + "0" * 32
    for reply in (
        await steer(mcp, unknown, "hi"),
        await control(mcp, PAUSE, unknown),
        await control(mcp, RESUME, unknown),
    ):
        assert reply.error["code"] == errors.INVALID_PARAMS
        assert reply.error["message"] == errors.TASK_NOT_FOUND_MESSAGE
    # Without the extension: -32021 naming it, before any lookup.
    only_steering: dict[str, Any] = {"extensions": {STEERING_EXTENSION: {}}}
    for caps in (TASKS_AND_ELICITATION, only_steering):
        refused = await steer(mcp, unknown, "hi", capabilities=caps)
        assert (refused.status, refused.error["code"]) == (
            400,
            errors.MISSING_REQUIRED_CLIENT_CAPABILITY,
        )
    assert (await steer(mcp, unknown, "hi", capabilities=TASKS_AND_ELICITATION)).error["data"] == {
        "requiredCapabilities": {"extensions": {STEERING_EXTENSION: {}}}
    }
    # A tool that does not opt in: refused, saying so; nothing reaches its task.
    approval = await mcp.create_task("request_approval", {"message": "Go?"})
    for reply in (await steer(mcp, approval, "hi"), await control(mcp, PAUSE, approval)):
        assert reply.error["code"] == errors.NOT_STEERABLE
        assert reply.error["data"] == {"tool": "request_approval"}
        assert "does not declare" in reply.error["message"]
    # An exposed workflow whose tools.toml entry does not opt in: refused alike.
    exposed = await mcp.create_task("unserved_order", {"item": "x"})
    refused_exposed = await control(mcp, PAUSE, exposed)
    assert refused_exposed.error["code"] == errors.NOT_STEERABLE
    assert "`pausable`" in refused_exposed.error["message"]
    await mcp.cancel_task(exposed)
    job = await mcp.create_task("multi_step_job", {"require_approval": True, "steps": 1})
    not_paused = await control(mcp, RESUME, job)
    assert not_paused.error["code"] == errors.NOT_PAUSED
    empty = await steer(mcp, job, "")
    assert empty.error["code"] == errors.INVALID_PARAMS
    await mcp.cancel_task(job)
    await mcp.cancel_task(approval)
    await mcp.wait_terminal(job)
    ended = await steer(mcp, job, "too late")
    assert ended.error["code"] == errors.TASK_ENDED


async def test_a_host_without_tasks_steers_pauses_and_resumes_with_the_follow_up_tools(
    mcp: McpClient,
) -> None:
    task_id = await mcp.create_task("multi_step_job", {"require_approval": True, "steps": 1})
    await mcp.wait_status(task_id, "input_required", within=10)

    async def follow_up(name: str, **arguments: Any) -> dict[str, Any]:
        reply = await mcp.call_tool(name, {"taskId": task_id, **arguments}, capabilities={})
        return dict(reply.result)

    paused = await follow_up("task_pause")
    assert paused["isError"] is False and "pauses" in paused["content"][0]["text"]
    await wait_status_seen_by(mcp, task_id, "paused", STEERING)
    assert (await follow_up("task_steer", message="canary first"))["isError"] is False
    twice = await follow_up("task_pause")
    assert twice["isError"] is True and "already paused" in twice["content"][0]["text"]
    assert (await follow_up("task_resume"))["isError"] is False
    await mcp.update_task(task_id, {"approve": APPROVE})
    done = await mcp.wait_terminal(task_id, within=20)
    assert done["result"]["structuredContent"]["steering"][0]["message"] == "canary first"
    refused = await mcp.call_tool(
        "task_steer", {"taskId": task_id, "message": "x"}, capabilities={}
    )
    assert refused.result["isError"] is True
    assert refused.result["structuredContent"]["code"] == errors.TASK_ENDED


@pytest.fixture(scope="module")
async def steered_tool(registry: ToolRegistry, temporal_client: Client) -> AsyncIterator[str]:
    """A team's exposed workflow that opts in, with its own worker (the team's)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "steered.toml"
        path.write_text(STEERED_TOML)
        (entry,) = load(path)
    registry.add(entry.tool())
    try:
        async with Worker(
            temporal_client, task_queue=STEERED_TASK_QUEUE, workflows=[SteeredRollout]
        ):
            yield entry.name
    finally:
        registry.remove(entry.name)


async def test_an_exposed_workflow_that_opts_in_gets_steer_pause_and_resume_relayed_in_order(
    mcp: McpClient, steered_tool: str
) -> None:
    task_id = await mcp.create_task(steered_tool, {})
    await mcp.wait_for(task_id, lambda t: "running" in str(t.get("statusMessage")), within=10)
    assert (await control(mcp, PAUSE, task_id)).status == 200
    # `paused` once the team's workflow says it holds (mcp.paused), to that client only.
    await wait_status_seen_by(mcp, task_id, "paused", STEERING)
    assert await status(mcp, task_id, TASKS_AND_ELICITATION) == "working"
    await steer(mcp, task_id, "first")
    await steer(mcp, task_id, "second")
    assert (await control(mcp, RESUME, task_id)).status == 200
    done = await mcp.wait_terminal(task_id, within=20)
    result = done["result"]["structuredContent"]
    assert [(m["seq"], m["message"]) for m in result["messages"]] == [(1, "first"), (2, "second")]
    assert all(m["v"] == 1 for m in result["messages"]) and result["pauses"] == 1


def test_the_memo_says_paused_only_while_paused_so_other_memos_stay_as_they_were() -> None:
    state = TaskState("t", "multi_step_job", "o", "2026-01-01T00:00:00.000Z", "x", None, 1000)
    assert "paused" not in state.to_memo()
    paused = replace(state, paused=True)
    assert paused.to_memo()["paused"] is True
    assert TaskState.from_memo(paused.to_memo()) == paused
    assert TaskState.from_memo({**state.to_memo(), "paused": "yes"}) == state


async def test_steer_messages_and_a_pause_carry_over_a_continue_as_new(
    temporal_client: Client,
) -> None:
    task = TaskInput(
        task_id=f"steered-{uuid.uuid4()}",
        tool="steered",
        arguments={},
        created_at="2026-01-01T00:00:00.000Z",
        ttl_ms=None,
        poll_interval_ms=500,
        owner="o",
    )
    queue = f"steered-{uuid.uuid4()}"
    async with Worker(temporal_client, task_queue=queue, workflows=[SteeredAcrossRuns]):
        handle = await temporal_client.start_workflow(
            "TestsSteeredAcrossRuns", task, id=task.task_id, task_queue=queue
        )

        async def state() -> dict[str, Any]:
            found: dict[str, Any] = await handle.query(STATE_QUERY)
            return found

        await until(state, lambda s: s.get("status") == "input_required")
        await handle.signal(STEER_SIGNAL, SteerInput("one", by="ann"))
        await handle.signal(PAUSE_SIGNAL, AuditStamp("p"))
        await handle.signal(SUBMIT_INPUT_SIGNAL, SubmitInput({"go": {"action": "accept"}}))
        # The new run holds at its safe point, still paused; it takes the next message in.
        held = await until(state, lambda s: str(s.get("statusMessage")).startswith("Paused:"))
        assert held["paused"] is True
        await handle.signal(STEER_SIGNAL, SteerInput("two"))
        await handle.signal(RESUME_SIGNAL, AuditStamp("p"))
        result = await handle.result()
    assert result["structuredContent"]["messages"] == [[1, "one", "ann"], [2, "two", ""]]


async def until(
    read: Callable[[], Awaitable[dict[str, Any]]], done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """`read()` again until `done` holds (bounded)."""
    deadline = time.monotonic() + 10
    value = await read()
    while not done(value):
        assert time.monotonic() < deadline, f"not there within 10 s: {value}"
        await asyncio.sleep(0.05)
        value = await read()
    return value


async def test_each_steering_call_writes_an_audit_line_without_the_message(
    mcp: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_server.protocol.audit")
    task_id = await mcp.create_task("multi_step_job", {"require_approval": True, "steps": 1})
    await steer(mcp, task_id, "a secret plan")
    await control(mcp, RESUME, task_id)  # refused: not paused
    lines = [
        json.loads(r.getMessage())
        for r in caplog.records
        if r.name == "mcp_server.protocol.audit" and task_id in r.getMessage()
    ]
    steering = [
        (line["event"], line["outcome"]) for line in lines if line["event"] != "task.create"
    ]
    assert steering == [("task.steer", "acked"), ("task.resume", f"error {errors.NOT_PAUSED}")]
    assert "a secret plan" not in caplog.text
    await mcp.cancel_task(task_id)
