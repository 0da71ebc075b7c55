"""The tasks extension (wire §2). The rules of the protocol layer (capabilities, errors, answers,
cancel) run in-process on the in-memory store (`asgi_mcp`), whose behaviour the contract suite
(tests/contract/) holds to Temporal's; what only Temporal shows (a task's run to its result,
TTLs, payload limits, termination, no worker alive, reads of history) runs end to end: real
HTTP, real Temporal, a real worker (`mcp`, `fresh_stack`)."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_server.protocol.frame import errors
from mcp_server.protocol.frame.wire import parse_iso
from mcp_server.runtime.devserver import TemporalDevServer
from mcp_server.tasks.description import describe
from mcp_server.tasks.store import TemporalTaskStore
from mcp_tasks.contracts.task_state import MEMO_KEY, TaskState
from tests.asgi_stack import AsgiStack, reads_of
from tests.conftest import Stack, StackFactory
from tests.fixture_tools import SHORT_TTL_MS
from tests.mcp_client import NO_CAPABILITIES, TASKS, McpClient

ACCEPT = {"action": "accept", "content": {"confirm": True}}
ENVELOPE_KEYS = {"taskId", "status", "result", "error", "inputRequests"}


async def test_a_created_task_is_readable_at_once_and_completes_with_the_tool_result(
    mcp: McpClient,
) -> None:
    created = (await mcp.call_tool("slow_compute", {"seconds": 1, "label": "one"})).result
    assert created["resultType"] == "task" and created["status"] == "working"
    assert not {"task", "result", "error", "inputRequests", "requestState"} & created.keys()
    assert created["ttlMs"] > 0 and created["pollIntervalMs"] > 0
    first = (await mcp.get_task(created["taskId"])).result
    assert first["taskId"] == created["taskId"] and first["resultType"] == "complete"
    done = await mcp.wait_terminal(created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == {"label": "one", "seconds": 1}
    assert done["result"]["isError"] is False and "one" in done["result"]["content"][0]["text"]


async def test_task_ids_are_random_128_bit_handles(asgi_mcp: McpClient) -> None:
    ids = {await asgi_mcp.create_task("slow_compute", {"seconds": 0}) for _ in range(3)}
    assert len(ids) == 3
    assert all(re.fullmatch(r"mcp-task-[0-9a-f]{32}", task_id) for task_id in ids)


async def test_an_optional_task_tool_runs_synchronously_without_the_extension(
    asgi_mcp: McpClient,
) -> None:
    result = (
        await asgi_mcp.call_tool(
            "slow_compute", {"seconds": 0.2, "label": "sync"}, capabilities=NO_CAPABILITIES
        )
    ).result
    assert result["resultType"] == "complete" and "taskId" not in result
    assert "sync" in result["content"][0]["text"]


async def test_a_sync_tool_stays_synchronous_and_ignores_a_legacy_task_param(
    asgi_mcp: McpClient,
) -> None:
    reply = await asgi_mcp.call_tool("greet", {"name": "Bo"}, extra={"task": {"ttl": 1000}})
    assert reply.result["resultType"] == "complete"
    assert reply.result["content"][0]["text"] == "Hello, Bo!"


async def test_a_required_task_tool_without_the_extension_is_32021(asgi_mcp: McpClient) -> None:
    reply = await asgi_mcp.call_tool("failing_job", capabilities=NO_CAPABILITIES)
    assert (reply.status, reply.error["code"]) == (400, errors.MISSING_REQUIRED_CLIENT_CAPABILITY)
    assert reply.error["data"] == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }


async def test_a_task_that_asks_needs_the_elicitation_capability(asgi_mcp: McpClient) -> None:
    reply = await asgi_mcp.call_tool("confirm_delete", {"filename": "a"}, capabilities=TASKS)
    assert reply.error["code"] == errors.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert reply.error["data"]["requiredCapabilities"] == {"elicitation": {}}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_tasks_methods_without_the_extension_are_32021_before_any_lookup(
    asgi_mcp: McpClient, method: str
) -> None:
    params = {"taskId": "no-such-task", "inputResponses": {}}
    reply = await asgi_mcp.rpc(method, params, capabilities=NO_CAPABILITIES)
    assert (reply.status, reply.error["code"]) == (400, errors.MISSING_REQUIRED_CLIENT_CAPABILITY)


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_an_unknown_task_is_invalid_params(asgi_mcp: McpClient, method: str) -> None:
    reply = await asgi_mcp.rpc(method, {"taskId": "mcp-task-" + "0" * 32, "inputResponses": {}})
    assert reply.error == {"code": errors.INVALID_PARAMS, "message": errors.TASK_NOT_FOUND_MESSAGE}


async def test_arguments_that_break_the_input_schema_are_invalid_params(
    asgi_mcp: McpClient,
) -> None:
    reply = await asgi_mcp.call_tool("slow_compute", {"seconds": "soon"})
    assert reply.error["code"] == errors.INVALID_PARAMS
    assert "seconds" in reply.error["message"]
    unknown = await asgi_mcp.call_tool("no_such_tool")
    assert unknown.error["code"] == errors.INVALID_PARAMS


async def test_a_tool_error_is_completed_with_is_error(asgi_mcp: McpClient) -> None:
    task = await asgi_mcp.wait_terminal(await asgi_mcp.create_task("failing_job"))
    assert task["status"] == "completed" and task["result"]["isError"] is True


async def test_a_protocol_error_is_failed_with_a_json_rpc_error_and_no_result(
    asgi_mcp: McpClient,
) -> None:
    task = await asgi_mcp.wait_terminal(await asgi_mcp.create_task("protocol_error_job"))
    assert task["status"] == "failed" and "result" not in task
    assert task["error"]["code"] == errors.INTERNAL_ERROR
    assert task["statusMessage"].startswith("Task failed")


async def test_an_answer_reads_the_task_once(
    asgi_stack: AsgiStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    mcp = asgi_stack.mcp
    task_id = await mcp.create_task("confirm_delete", {"filename": "once.csv"})
    await mcp.wait_status(task_id, "input_required", within=5)
    reads = reads_of(asgi_stack, monkeypatch)
    assert (await mcp.update_task(task_id, {"confirm": ACCEPT})).status == 200
    assert reads == [task_id]  # one store read, one pass through the "not found" limit


async def test_an_answer_resumes_a_task_waiting_for_input(asgi_mcp: McpClient) -> None:
    task_id = await asgi_mcp.create_task("confirm_delete", {"filename": "report.csv"})
    waiting = await asgi_mcp.wait_status(task_id, "input_required", within=5)
    request = waiting["inputRequests"]["confirm"]
    assert request["method"] == "elicitation/create"
    assert "report.csv" in waiting["statusMessage"]
    ack = (await asgi_mcp.update_task(task_id, {"confirm": ACCEPT})).result
    assert (
        ack == {"resultType": "complete", "_meta": ack["_meta"]} and not ENVELOPE_KEYS & ack.keys()
    )
    done = await asgi_mcp.wait_terminal(task_id)
    assert done["result"]["content"][0]["text"] == "Deleted report.csv"


async def test_a_partial_answer_is_visible_on_the_very_next_get(asgi_mcp: McpClient) -> None:
    task_id = await asgi_mcp.create_task("multi_input")
    await asgi_mcp.wait_for(task_id, lambda t: len(t.get("inputRequests", {})) == 2, within=5)
    await asgi_mcp.update_task(task_id, {"name": {"action": "accept", "content": {"name": "Ann"}}})
    after = (await asgi_mcp.get_task(task_id)).result
    assert after["status"] == "input_required" and list(after["inputRequests"]) == ["confirm"]
    await asgi_mcp.update_task(task_id, {"confirm": ACCEPT})
    assert (await asgi_mcp.wait_terminal(task_id))["status"] == "completed"


async def test_unknown_keys_are_ignored_but_a_malformed_answer_is_rejected(
    asgi_mcp: McpClient,
) -> None:
    task_id = await asgi_mcp.create_task("confirm_delete", {"filename": "x"})
    await asgi_mcp.wait_status(task_id, "input_required", within=5)
    ignored = await asgi_mcp.update_task(task_id, {"unknown-key": {"ignored": True}})
    assert ignored.result["resultType"] == "complete"
    bad = await asgi_mcp.update_task(task_id, {"confirm": {"action": "maybe"}})
    assert bad.error["code"] == errors.INVALID_PARAMS and "action" in bad.error["message"]
    still = (await asgi_mcp.get_task(task_id)).result
    assert still["status"] == "input_required" and "confirm" in still["inputRequests"]
    not_an_object = await asgi_mcp.rpc("tasks/update", {"taskId": task_id, "inputResponses": [1]})
    assert not_an_object.error["code"] == errors.INVALID_PARAMS
    await asgi_mcp.cancel_task(task_id)


async def test_a_declined_answer_is_delivered_to_the_tool(asgi_mcp: McpClient) -> None:
    task_id = await asgi_mcp.create_task("confirm_delete", {"filename": "keep.txt"})
    await asgi_mcp.wait_status(task_id, "input_required", within=5)
    await asgi_mcp.update_task(task_id, {"confirm": {"action": "decline"}})
    done = await asgi_mcp.wait_terminal(task_id)
    assert done["result"]["structuredContent"] == {"deleted": False}


async def test_cancel_ends_a_running_task_within_seconds(mcp: McpClient) -> None:
    task_id = await mcp.create_task("slow_compute", {"seconds": 600})
    ack = (await mcp.cancel_task(task_id)).result
    assert not ENVELOPE_KEYS & ack.keys()
    assert (await mcp.wait_terminal(task_id, within=10))["status"] == "cancelled"


async def test_cancel_ends_a_task_waiting_for_input(asgi_mcp: McpClient) -> None:
    task_id = await asgi_mcp.create_task("confirm_delete", {"filename": "y"})
    await asgi_mcp.wait_status(task_id, "input_required", within=5)
    await asgi_mcp.cancel_task(task_id)
    cancelled = await asgi_mcp.wait_terminal(task_id)
    assert cancelled["status"] == "cancelled" and "inputRequests" not in cancelled


async def test_cancel_and_update_of_a_terminal_task_are_acked_and_keep_its_result(
    asgi_mcp: McpClient,
) -> None:
    task_id = await asgi_mcp.create_task("slow_compute", {"seconds": 0})
    done = await asgi_mcp.wait_terminal(task_id)
    assert (await asgi_mcp.cancel_task(task_id)).result["resultType"] == "complete"
    assert (await asgi_mcp.update_task(task_id, {"k": ACCEPT})).result["resultType"] == "complete"
    again = (await asgi_mcp.get_task(task_id)).result
    assert again["status"] == "completed" and again["result"] == done["result"]


async def test_a_task_is_readable_until_its_ttl_and_not_found_after(
    asgi_stack: AsgiStack,
) -> None:
    mcp, clock = asgi_stack.mcp, asgi_stack.clock
    task_id = await mcp.create_task("tests_short_lived")
    done = await mcp.wait_terminal(task_id)
    # ttlMs grows only when the task closed late in its TTL (a grace to read how it ended,
    # ttl.py): on a slow machine this one may have taken more than half of its 3 s to run.
    ttl_ms = done["ttlMs"]
    ran_s = (parse_iso(done["lastUpdatedAt"]) - parse_iso(done["createdAt"])).total_seconds()
    assert ttl_ms == max(SHORT_TTL_MS, int(ran_s * 1000) + SHORT_TTL_MS // 2)
    expires = parse_iso(done["createdAt"]) + timedelta(milliseconds=ttl_ms)
    clock.stop_at(expires - timedelta(milliseconds=1))
    assert (await mcp.get_task(task_id)).result["status"] == "completed"
    clock.stop_at(expires)
    reply = await mcp.get_task(task_id)
    assert reply.error == {"code": errors.INVALID_PARAMS, "message": errors.TASK_NOT_FOUND_MESSAGE}


async def test_a_task_that_outlives_its_ttl_fails_and_stays_readable_a_while(
    mcp: McpClient,
) -> None:
    # Readable until createdAt + 4.5 s (its 3 s TTL and half of it again, ttl.py). A "not
    # found" answered before then is the server's fault; one answered later may be the test's
    # own (a loaded machine stalled it past the 1.5 s window), and then a new task tries again.
    grace = timedelta(milliseconds=SHORT_TTL_MS + SHORT_TTL_MS // 2)
    for _ in range(3):
        created = (await mcp.call_tool("tests_times_out", {})).result
        readable_until = parse_iso(created["createdAt"]) + grace
        deadline = time.monotonic() + SHORT_TTL_MS / 1000 + 10
        while time.monotonic() < deadline:
            reply = await mcp.poll_task(created["taskId"])
            if "error" in reply.body:
                assert datetime.now(UTC) >= readable_until, f"gone early: {reply.body}"
                assert reply.error == {
                    "code": errors.INVALID_PARAMS,
                    "message": errors.TASK_NOT_FOUND_MESSAGE,
                }
                break
            task = reply.result
            if task["status"] != "working":
                assert task["status"] == "failed", task
                assert task["error"]["code"] == errors.INTERNAL_ERROR
                assert "time limit" in task["statusMessage"]
                assert task["ttlMs"] >= SHORT_TTL_MS + SHORT_TTL_MS // 2
                return
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"still working past its TTL: {task}")
    raise AssertionError("three tries never read the task within its 1.5 s grace")


async def test_a_result_above_the_payload_cap_ends_as_a_clear_tool_error(mcp: McpClient) -> None:
    task = await mcp.wait_terminal(await mcp.create_task("tests_huge_result", {"bytes": 3_000_000}))
    assert task["status"] == "completed" and task["result"]["isError"] is True
    assert "limit" in task["result"]["content"][0]["text"]


async def test_a_task_terminated_in_temporal_is_failed_with_an_honest_message(
    mcp: McpClient, temporal_client: Client
) -> None:
    task_id = await mcp.create_task("tests_wait_forever")
    await temporal_client.get_workflow_handle(task_id).terminate(reason="operator cleanup")
    task = await mcp.wait_terminal(task_id)
    assert task["status"] == "failed" and task["error"]["code"] == errors.INTERNAL_ERROR
    assert "operator cleanup" in task["statusMessage"]


async def test_a_task_is_a_workflow_whose_id_is_the_task_id(
    mcp: McpClient, temporal_client: Client
) -> None:
    task_id = await mcp.create_task("slow_compute", {"seconds": 0})
    await mcp.wait_terminal(task_id)
    description = await temporal_client.get_workflow_handle(task_id).describe()
    assert description.workflow_type == "SlowCompute"
    assert description.status == WorkflowExecutionStatus.COMPLETED


async def test_reads_and_answers_work_with_no_worker_alive(fresh_stack: StackFactory) -> None:
    async with fresh_stack() as stack:
        mcp = stack.mcp
        task_id = await mcp.create_task("multi_input")
        await mcp.wait_for(task_id, lambda t: len(t.get("inputRequests", {})) == 2, within=5)
        await stack.stop_worker()
        # No worker: tasks/get answers from describe(), the answer travels as a durable signal,
        # and the very next read already reflects it.
        await mcp.update_task(task_id, {"name": {"action": "accept", "content": {"name": "Z"}}})
        partial = (await mcp.get_task(task_id)).result
        assert partial["status"] == "input_required" and list(partial["inputRequests"]) == [
            "confirm"
        ]
        await mcp.update_task(task_id, {"confirm": ACCEPT})
        answered = (await mcp.get_task(task_id)).result
        assert answered["status"] == "working" and "inputRequests" not in answered
        await stack.start_worker()
        assert (await mcp.wait_terminal(task_id))["status"] == "completed"


async def test_a_cancel_with_no_worker_alive_is_kept_and_applied_later(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack() as stack:
        mcp = stack.mcp
        task_id = await mcp.create_task("slow_compute", {"seconds": 600})
        await mcp.wait_for(task_id, lambda t: t.get("statusMessage", "").startswith("Computing"))
        await stack.stop_worker()
        await mcp.cancel_task(task_id)
        pending = (await mcp.get_task(task_id)).result
        assert pending["status"] == "working"
        assert pending["statusMessage"] == "Cancellation requested"
        await stack.start_worker()
        assert (await mcp.wait_terminal(task_id))["status"] == "cancelled"


async def test_a_completed_task_says_so_with_the_first_line_of_its_result(
    asgi_mcp: McpClient,
) -> None:
    task_id = await asgi_mcp.create_task("slow_compute", {"seconds": 0, "label": "summary"})
    done = await asgi_mcp.wait_terminal(task_id)
    assert done["statusMessage"] == "Completed: Computed 'summary' in 0 s"


async def test_a_read_racing_an_answer_that_also_ended_the_task_shows_the_end(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    """describe() sees the question and the answer's pending workflow task; before the history
    is read, the workflow takes the answer and completes. The read must not show the answered
    question again."""
    async with fresh_stack() as stack:
        mcp = stack.mcp
        task_id = await mcp.create_task("confirm_delete", {"filename": "race.txt"})
        await mcp.wait_status(task_id, "input_required", within=5)
        await stack.stop_worker()
        await mcp.update_task(task_id, {"confirm": ACCEPT})
        handle = temporal_client.get_workflow_handle(task_id)
        stale = await describe(temporal_client, task_id, timedelta(seconds=5))
        state = TaskState.from_memo(await stale.memo_value(MEMO_KEY, None))
        assert state is not None and state.status == "input_required"
        assert stale.raw_description.HasField("pending_workflow_task")
        await stack.start_worker()
        await handle.result()
        store = TemporalTaskStore(temporal_client, stack.settings.task_queue)
        snapshot = await store.running_snapshot(task_id, stale, state)
        assert snapshot.status == "completed" and snapshot.input_requests == {}


async def test_a_quiet_running_task_is_read_with_one_describe_and_no_history_read(
    mcp: McpClient, temporal: TemporalDevServer, stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing pending (no signal or cancellation waits for the workflow): the memo is the
    whole truth, so tasks/get costs one RPC; with an answer pending, the tail is read."""
    client = await Client.connect(temporal.address)
    service = client.workflow_service
    calls: list[str] = []
    for name in ("describe_workflow_execution", "get_workflow_execution_history_reverse"):
        real = getattr(service, name)

        async def counted(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            calls.append(_name)
            return await _real(*args, **kw)

        monkeypatch.setattr(service, name, counted)
    store = TemporalTaskStore(client, stack.settings.task_queue)
    task_id = await mcp.create_task("multi_input")
    await mcp.wait_for(task_id, lambda t: len(t.get("inputRequests", {})) == 2, within=5)
    await store.get(task_id)
    assert calls == ["describe_workflow_execution"]
