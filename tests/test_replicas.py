"""Two `mcp-tasks server` and two `mcp-tasks worker` processes on one Temporal: a client that
alternates between the servers sees one task, in both protocol eras; an answer taken by one
server reaches tasks/get on the other, which follows the task, within the documented bound;
kill -9 of one server and
one worker mid-flight loses nothing; the open-task quota is one quota across servers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcp_server.protocol.frame.errors import QUOTA_EXCEEDED
from mcp_server.runtime.devserver import TemporalDevServer
from tests.client_2025 import Client2025
from tests.mcp_client import McpClient
from tests.replicas import Replicas, kill, replicas
from tests.tasks.test_followed_reads import CHANGE_BOUND_S

pytestmark = pytest.mark.slow

APPROVE = {"approve": {"action": "accept", "content": {"approve": True}}}


async def two_of_each(running: Replicas, http: httpx.AsyncClient) -> tuple[McpClient, McpClient]:
    running.start("worker")
    running.start("worker")
    (_, port_a), (_, port_b) = running.server(), running.server()
    for port in (port_a, port_b):
        await running.ready(http, port)
    return (
        McpClient(http, f"http://127.0.0.1:{port_a}/mcp"),
        McpClient(http, f"http://127.0.0.1:{port_b}/mcp"),
    )


def job(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "steps": 2, "step_seconds": 0.2, **arguments}


async def test_a_client_alternating_between_two_servers_sees_one_task(
    temporal: TemporalDevServer, tmp_path: Path
) -> None:
    with replicas(temporal.address, tmp_path) as running:
        async with httpx.AsyncClient(timeout=30) as http:
            a, b = await two_of_each(running, http)
            # 2026-07-28: create on A, read on B, answer on A, result on B.
            task_id = await a.create_task("multi_step_job", job("alt", require_approval=True))
            parked = await b.wait_status(task_id, "input_required", within=30)
            assert list(parked["inputRequests"]) == ["approve"]
            assert (await a.update_task(task_id, APPROVE)).status == 200
            done = await b.wait_terminal(task_id, within=30)
            assert done["status"] == "completed"
            assert done["result"]["structuredContent"]["approved"] is True
            assert len(done["result"]["structuredContent"]["steps"]) == 2

            # 2025-11-25: the session minted by A is served by B (it is signed, not stored).
            async def approve(request: dict[str, Any]) -> dict[str, Any]:
                assert request["method"] == "elicitation/create"
                legacy.url = a.url  # the answer goes to A while B streams tasks/result
                return {"action": "accept", "content": {"decision": "approve"}}

            legacy = Client2025(http, a.url, on_request=approve)
            await legacy.initialize()
            legacy.url = b.url
            call = {"name": "request_approval", "arguments": {"message": "Ship it?"}, "task": {}}
            created = (await legacy.request("tools/call", call)).result["task"]
            legacy.url = a.url
            for _ in range(300):
                got = (await legacy.request("tasks/get", {"taskId": created["taskId"]})).result
                if got["status"] == "input_required":
                    break
                await asyncio.sleep(0.1)
            assert got["status"] == "input_required"
            legacy.url = b.url
            done_legacy = await legacy.request("tasks/result", {"taskId": created["taskId"]})
            assert done_legacy.result["content"][0]["text"] == "Decision: approved"
            assert [m["method"] for m in done_legacy.messages if "method" in m] == [
                "elicitation/create"
            ]

            # The session's GET stream on B, open before the task exists, relays the question
            # of a task the session creates on A (its task list is in Temporal, not in B).
            headers = {**legacy.headers(), "Accept": "text/event-stream"}
            async with asyncio.timeout(30), http.stream("GET", b.url, headers=headers) as stream:
                assert stream.status_code == 200
                legacy.url = a.url
                later = (await legacy.request("tools/call", call)).result["task"]["taskId"]
                async for line in stream.aiter_lines():
                    if line.startswith("data: "):
                        asked = json.loads(line[len("data: ") :])
                        break
            assert asked["method"] == "elicitation/create"
            assert asked["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {
                "taskId": later
            }


def answered(task: dict[str, Any]) -> bool:
    return "approve" not in task.get("inputRequests", {})


async def followed_reads(http: httpx.AsyncClient, server: McpClient) -> float:
    """The server's tasks/get answered from a task it follows (mcp_tasks_task_reads_total)."""
    text = (await http.get(server.url.replace("/mcp", "/metrics"))).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "mcp_tasks_task_reads_total" and sample.labels["source"] == "followed"
    )


async def test_an_answer_on_one_server_reaches_tasks_get_on_the_other_within_the_bound(
    temporal: TemporalDevServer, tmp_path: Path
) -> None:
    with replicas(temporal.address, tmp_path) as running:
        async with httpx.AsyncClient(timeout=30) as http:
            a, b = await two_of_each(running, http)
            parked = job("seen", step_seconds=60, require_approval=True)
            task_id = await a.create_task("multi_step_job", parked)
            await b.wait_status(task_id, "input_required", within=30)
            await b.wait_status(task_id, "input_required")  # read again: B follows it now
            before = await followed_reads(http, b)
            assert (await b.poll_task(task_id)).result["status"] == "input_required"
            assert await followed_reads(http, b) == before + 1  # answered without Temporal
            assert (await a.update_task(task_id, APPROVE)).status == 200
            # B learns of the answer from its own long-poll of the task's history.
            seen = await b.wait_for(task_id, answered, within=CHANGE_BOUND_S, poll=0.02)
            assert seen["status"] == "working"
            assert (await b.cancel_task(task_id)).status == 200
            # Cancel-then-get on one server, of a task it follows, parked at its question.
            other = await a.create_task("multi_step_job", job("cancel", require_approval=True))
            await b.wait_status(other, "input_required", within=30)
            await b.wait_status(other, "input_required")
            assert (await b.cancel_task(other)).status == 200
            cancelling = (await b.poll_task(other)).result
            assert cancelling["status"] == "cancelled" or (
                cancelling["statusMessage"].startswith("Cancellation requested")
            )


async def test_kill_9_of_one_server_and_one_worker_mid_flight_loses_nothing(
    temporal: TemporalDevServer, tmp_path: Path
) -> None:
    with replicas(temporal.address, tmp_path) as running:
        async with httpx.AsyncClient(timeout=30) as http:
            a, b = await two_of_each(running, http)
            server_a, worker_a = running.processes[2], running.processes[0]
            # Working tasks (long enough steps that both workers hold some when one dies) and
            # parked ones, half of them created on each server.
            working = [
                await (a if i % 2 else b).create_task(
                    "multi_step_job", job(f"w{i}", steps=2, step_seconds=4)
                )
                for i in range(6)
            ]
            parked = [
                await (a if i % 2 else b).create_task(
                    "multi_step_job", job(f"p{i}", require_approval=True)
                )
                for i in range(4)
            ]
            for task_id in working:
                await b.wait_for(
                    task_id, lambda t: "step 1" in t.get("statusMessage", ""), within=30
                )
            for task_id in parked:
                await b.wait_status(task_id, "input_required", within=30)
            kill(server_a)
            kill(worker_a)
            # The survivors take everything over: B answers the parked tasks, W_B runs the
            # steps W_A held (retried after their 5 s heartbeat timeout).
            for task_id in parked:
                assert (await b.update_task(task_id, APPROVE)).status == 200
            for task_id in working + parked:
                done = await b.wait_terminal(task_id, within=90)
                assert done["status"] == "completed", done
                content = done["result"]["structuredContent"]
                assert content["approved"] is True and len(content["steps"]) == 2, content
                assert done["result"]["isError"] is False


async def test_two_servers_share_one_open_task_quota(
    temporal: TemporalDevServer, tmp_path: Path
) -> None:
    with replicas(temporal.address, tmp_path, max_open_tasks_per_principal="3") as running:
        async with httpx.AsyncClient(timeout=30) as http:
            a, b = await two_of_each(running, http)
            parked = job("q", require_approval=True)
            first = [
                await a.create_task("multi_step_job", parked),
                await b.create_task("multi_step_job", parked),
                await a.create_task("multi_step_job", parked),
            ]
            for server in (a, b):
                refused = await server.call_tool("multi_step_job", parked)
                assert refused.status == 429
                assert refused.error["code"] == QUOTA_EXCEEDED
                assert "3" in refused.error["message"]
            # A task that ends frees its slot for either server.
            await b.wait_status(first[0], "input_required", within=30)
            assert (await b.update_task(first[0], APPROVE)).status == 200
            await a.wait_terminal(first[0], within=30)
            for _ in range(100):
                again = await b.call_tool("multi_step_job", parked)
                if again.status != 429:
                    break
                await asyncio.sleep(0.2)
            assert again.result["resultType"] == "task"
