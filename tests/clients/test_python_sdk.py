"""The official Python SDK client (`mcp` 2.x) against the real server, in each of its modes:
`mode="2026-07-28"` (adopts the revision, no handshake), `"auto"` (`server/discover`, falling
back to `initialize`) and `"legacy"` (the 2025-11-25 `initialize` handshake and session).

The SDK has no tasks verb of its own. At 2026-07-28 it declares no tasks extension, so
task-optional tools run synchronously and task-only tools are refused. At 2025-11-25 every task
tool is task-optional and a call without `task` runs the task attached to it: its progress
reaches the SDK's progress callback, its questions its elicitation callback (on the call's SSE
stream); a question the session cannot take (no elicitation callback, so none declared) ends
the call with the follow-up result, and the task is finished through the follow-up tools
(`task_status`, `task_respond`, `task_cancel`). Its `extensions=` seam takes a SEP-2663 client
extension; the tests at the end plug in the one fastmcp-tasks ships.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastmcp_tasks.client import TasksClientExtension
from fastmcp_tasks.client_models import (
    CancelTaskRequest,
    CancelTaskRequestParams,
    ClientCreateTaskResult,
)
from mcp import Client
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.shared.exceptions import MCPError

from tests.conftest import Stack

pytestmark = pytest.mark.clients

MODERN = pytest.param("2026-07-28", id="2026-07-28")
AUTO = pytest.param("auto", id="auto")
LEGACY = pytest.param("legacy", id="legacy")
ALL_MODES = [MODERN, AUTO, LEGACY]


def answering(content: dict[str, Any], asked: list[types.ElicitRequestParams]) -> ElicitationFnT:
    """An elicitation callback that records what it is asked and accepts with `content`."""

    async def callback(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        asked.append(params)
        return types.ElicitResult(action="accept", content=content)

    return callback


@asynccontextmanager
async def connected(url: str, mode: str, **options: Any) -> AsyncIterator[Client]:
    with anyio.fail_after(30):
        async with Client(url, mode=mode, read_timeout_seconds=20, **options) as client:
            yield client


def text_of(result: types.CallToolResult) -> str:
    assert isinstance(result.content[0], types.TextContent), result
    return result.content[0].text


@pytest.mark.parametrize("mode", ALL_MODES)
async def test_the_sdk_lists_the_conformance_and_demo_tools(stack: Stack, mode: str) -> None:
    async with connected(stack.url, mode) as client:
        listed = await client.list_tools()
    names = {tool.name for tool in listed.tools}
    assert {"greet", "slow_compute", "confirm_delete", "request_approval", "echo"} <= names


@pytest.mark.parametrize("mode", ALL_MODES)
async def test_the_sdk_calls_greet_synchronously(stack: Stack, mode: str) -> None:
    async with connected(stack.url, mode) as client:
        result = await client.call_tool("greet", {"name": "Ada"})
    assert text_of(result) == "Hello, Ada!"
    assert not result.is_error


@pytest.mark.parametrize("mode", [MODERN, AUTO])
async def test_the_sdk_negotiates_2026_07_28_with_this_server(stack: Stack, mode: str) -> None:
    async with connected(stack.url, mode) as client:
        assert client.protocol_version == "2026-07-28"


async def test_the_sdk_in_legacy_mode_completes_the_2025_11_25_handshake(stack: Stack) -> None:
    async with connected(stack.url, "legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info is not None


@pytest.mark.parametrize("mode", ALL_MODES)
async def test_without_the_tasks_extension_slow_compute_runs_synchronously(
    stack: Stack, mode: str
) -> None:
    async with connected(stack.url, mode) as client:
        result = await client.call_tool("slow_compute", {"seconds": 1, "label": "sdk"})
    assert text_of(result) == "Computed 'sdk' in 1 s"
    assert result.structured_content == {"label": "sdk", "seconds": 1}


@pytest.mark.parametrize("mode", ALL_MODES)
async def test_the_sdk_answers_an_elicitation_through_its_own_callback(
    stack: Stack, mode: str
) -> None:
    # 2026-07-28: an input_required result (MRTR) the SDK resolves through the callback and
    # retries; 2025-11-25: an elicitation/create request on the tools/call SSE response.
    asked: list[types.ElicitRequestParams] = []
    callback = answering({"colour": "teal"}, asked)
    async with connected(stack.url, mode, elicitation_callback=callback) as client:
        result = await client.call_tool("test_streaming_elicitation", {})
    assert [params.message for params in asked] == ["Pick a colour"]
    assert text_of(result) == "Elicitation answered: accept {'colour': 'teal'}"


@pytest.mark.parametrize("mode", [MODERN, AUTO])
async def test_a_task_only_tool_is_refused_naming_the_tasks_extension(
    stack: Stack, mode: str
) -> None:
    asked: list[types.ElicitRequestParams] = []
    callback = answering({"confirm": True}, asked)
    async with connected(stack.url, mode, elicitation_callback=callback) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("confirm_delete", {"filename": "a.txt"})
    assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.error.data == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }
    assert asked == []


RELATED_TASK = "io.modelcontextprotocol/related-task"


def related_task(params: types.ElicitRequestParams) -> str:
    """The taskId a 2025-11-25 question names in its related-task `_meta`."""
    assert params.meta is not None, params
    meta: dict[str, Any] = dict(params.meta)
    task_id: str = meta[RELATED_TASK]["taskId"]
    return task_id


async def until_done(client: Client, task_id: str) -> types.CallToolResult:
    """Call `task_status` until it returns the task's own result (no status of a live task)."""
    with anyio.fail_after(15):
        while True:
            read = await client.call_tool("task_status", {"taskId": task_id})
            if (read.structured_content or {}).get("status") not in ("working", "input_required"):
                return read
            await anyio.sleep(0.2)


async def test_in_legacy_mode_slow_compute_runs_attached_with_progress(stack: Stack) -> None:
    # 2025-11-25 without `task`: the call waits for the task, whose statusMessage reaches the
    # SDK's progress callback (the SDK sends a progressToken when given one).
    reported: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, message))

    async with connected(stack.url, "legacy") as client:
        result = await client.call_tool(
            "slow_compute", {"seconds": 1, "label": "attached"}, progress_callback=on_progress
        )
    assert text_of(result) == "Computed 'attached' in 1 s"
    # One notification per new statusMessage, counted from 1; "Queued" only when the call
    # reads the task before its workflow has started.
    assert [value for value, _ in reported] == list(range(1, len(reported) + 1))
    assert [message for _, message in reported] in (
        ["Computing 'attached' for 1 s"],
        ["Queued", "Computing 'attached' for 1 s"],
    )


async def test_in_legacy_mode_a_task_question_reaches_the_elicitation_callback(
    stack: Stack,
) -> None:
    # confirm_delete is task-only at 2026-07-28; at 2025-11-25 it is task-optional, and the
    # task's question is an elicitation/create request on the call's stream, related to it.
    asked: list[types.ElicitRequestParams] = []
    callback = answering({"confirm": True}, asked)
    async with connected(stack.url, "legacy", elicitation_callback=callback) as client:
        result = await client.call_tool("confirm_delete", {"filename": "a.txt"})
    assert [params.message for params in asked] == ["Delete a.txt?"]
    assert text_of(result) == "Deleted a.txt"
    assert result.structured_content == {"deleted": True}
    final = await stack.mcp.wait_status(related_task(asked[0]), "completed", within=5)
    assert final["result"]["structuredContent"] == {"deleted": True}


async def test_in_legacy_mode_request_approval_is_approved_through_the_elicitation_callback(
    stack: Stack,
) -> None:
    # The acceptance scenario: a 2025-11-25 client, Client(url, mode="legacy"), runs
    # request_approval and answers the approval in its own elicitation callback.
    asked: list[types.ElicitRequestParams] = []
    callback = answering({"decision": "approve", "reason": "looks good"}, asked)
    async with connected(stack.url, "legacy", elicitation_callback=callback) as client:
        assert client.protocol_version == "2025-11-25"
        result = await client.call_tool("request_approval", {"message": "Ship 1.3.0?"})
    assert [params.message for params in asked] == ["Ship 1.3.0?"]
    assert not result.is_error
    assert text_of(result) == "Decision: approved (looks good)"
    assert result.structured_content is not None
    assert result.structured_content["decision"] == "approved"
    assert result.structured_content["reason"] == "looks good"
    await stack.mcp.wait_status(related_task(asked[0]), "completed", within=5)


async def test_in_legacy_mode_a_question_the_session_cannot_take_ends_in_the_follow_up(
    stack: Stack,
) -> None:
    # Without an elicitation callback the SDK declares no elicitation: the attached run cannot
    # relay the task's question, so the call returns at once an ordinary result naming the task
    # and the follow-up tools, and the same client finishes the task through them.
    async with connected(stack.url, "legacy") as client:
        with anyio.fail_after(15):  # well before the 45 s wait: the call is not left hanging
            started = await client.call_tool("confirm_delete", {"filename": "f.txt"})
        assert not started.is_error
        follow_up = started.structured_content
        assert follow_up is not None
        assert follow_up["status"] == "input_required"
        assert follow_up["followUpTools"] == ["task_status", "task_respond", "task_cancel"]
        task_id = follow_up["taskId"]
        assert task_id in text_of(started)

        waiting = await client.call_tool("task_status", {"taskId": task_id})
        assert waiting.structured_content is not None
        assert waiting.structured_content["status"] == "input_required"
        assert 'key "confirm": Delete f.txt?' in text_of(waiting)

        answered = await client.call_tool(
            "task_respond", {"taskId": task_id, "action": "accept", "content": {"confirm": True}}
        )
        assert not answered.is_error, text_of(answered)
        assert answered.structured_content == {"key": "confirm"}

        done = await until_done(client, task_id)
    assert text_of(done) == "Deleted f.txt"
    assert done.structured_content == {"deleted": True}
    await stack.mcp.wait_status(task_id, "completed", within=5)


async def test_in_legacy_mode_a_follow_up_task_is_cancelled_with_task_cancel(
    stack: Stack,
) -> None:
    async with connected(stack.url, "legacy") as client:
        started = await client.call_tool("confirm_delete", {"filename": "kept.txt"})
        assert started.structured_content is not None
        task_id = started.structured_content["taskId"]
        cancelled = await client.call_tool("task_cancel", {"taskId": task_id})
        assert not cancelled.is_error, text_of(cancelled)
        assert cancelled.structured_content == {"taskId": task_id}
        await stack.mcp.wait_status(task_id, "cancelled", within=15)
        ended = await client.call_tool("task_status", {"taskId": task_id})
    assert ended.structured_content is not None
    assert ended.structured_content["status"] == "cancelled"


async def test_in_legacy_mode_the_follow_up_of_a_tool_with_an_output_schema_is_accepted(
    stack: Stack,
) -> None:
    # request_approval lists an outputSchema; the SDK checks every result's structuredContent
    # against it (unless isError), so the follow-up result, which is not an error, must match
    # what tools/list declared (an anyOf of the tool's schema and the follow-up shape). The
    # taskId is read from the text, which names it too.
    async with connected(stack.url, "legacy") as client:
        started = await client.call_tool("request_approval", {"message": "Nobody here"})
        assert not started.is_error
        named = re.search(r"mcp-task-[0-9a-f]+", text_of(started))
        assert named is not None, text_of(started)
        task_id = named.group()
        answered = await client.call_tool(
            "task_respond",
            {"taskId": task_id, "action": "accept", "content": {"decision": "approve"}},
        )
        assert not answered.is_error, text_of(answered)
        done = await until_done(client, task_id)
    assert done.structured_content is not None
    assert done.structured_content["decision"] == "approved"


# --- the SDK's extensions= seam with fastmcp-tasks' SEP-2663 client extension -----------------


@pytest.mark.parametrize("mode", [MODERN, AUTO])
async def test_with_the_tasks_extension_the_sdk_drives_slow_compute_as_a_task(
    stack: Stack, mode: str
) -> None:
    async with connected(stack.url, mode, extensions=[TasksClientExtension()]) as client:
        created = await client.session.call_tool(
            "slow_compute", {"seconds": 1, "label": "task"}, allow_claimed=True
        )
        assert isinstance(created, ClientCreateTaskResult)
        assert created.status == "working"
        result = await client.call_tool("slow_compute", {"seconds": 1, "label": "again"})
    assert text_of(result) == "Computed 'again' in 1 s"
    finished = await stack.mcp.wait_status(created.task_id, "completed", within=15)
    assert finished["result"]["content"][0]["text"] == "Computed 'task' in 1 s"


@pytest.mark.parametrize("mode", [MODERN, AUTO])
async def test_with_the_tasks_extension_a_task_asks_through_the_sdk_callback(
    stack: Stack, mode: str
) -> None:
    asked: list[types.ElicitRequestParams] = []
    callback = answering({"confirm": True}, asked)
    async with connected(
        stack.url,
        mode,
        elicitation_callback=callback,
        extensions=[TasksClientExtension(callback)],
    ) as client:
        result = await client.call_tool("confirm_delete", {"filename": "a.txt"})
    assert {params.message for params in asked} == {"Delete a.txt?"}
    assert text_of(result) == "Deleted a.txt"
    assert result.structured_content == {"deleted": True}


async def test_with_the_tasks_extension_a_rejection_given_in_the_callback_reaches_the_tool(
    stack: Stack,
) -> None:
    asked: list[types.ElicitRequestParams] = []
    callback = answering({"decision": "reject", "reason": "not on a Friday"}, asked)
    async with connected(
        stack.url,
        "2026-07-28",
        elicitation_callback=callback,
        extensions=[TasksClientExtension(callback)],
    ) as client:
        result = await client.call_tool("request_approval", {"message": "Ship 1.2.0?"})
    assert {params.message for params in asked} == {"Ship 1.2.0?"}
    assert result.structured_content is not None
    assert result.structured_content["decision"] == "rejected"
    assert result.structured_content["reason"] == "not on a Friday"


async def test_with_the_tasks_extension_a_cancelled_task_ends_cancelled(stack: Stack) -> None:
    async with connected(stack.url, "2026-07-28", extensions=[TasksClientExtension()]) as client:
        created = await client.session.call_tool(
            "slow_compute", {"seconds": 60}, allow_claimed=True
        )
        assert isinstance(created, ClientCreateTaskResult)
        # The empty ack ({"resultType": "complete"}) parses; a JSON-RPC error would raise.
        await client.session.send_request(
            CancelTaskRequest(params=CancelTaskRequestParams(task_id=created.task_id)),
            types.Result,
        )
    await stack.mcp.wait_status(created.task_id, "cancelled", within=15)
