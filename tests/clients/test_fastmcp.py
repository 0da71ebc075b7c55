"""The fastmcp client with its tasks helpers (fastmcp-tasks: the io.modelcontextprotocol/tasks
client extension folded into every `Client`, `call_tool_task` and its `ToolTask` handle)
against the real server.

fastmcp negotiates like the SDK it wraps: `mode="auto"` (its default) probes
`server/discover`, `"2026-07-28"` adopts the revision, `"legacy"` runs the 2025-11-25
handshake. Its tasks are modern-only: on a legacy connection it declares no tasks support and
sends no `task`, so the server runs each task tool attached to its `tools/call`: the task's
questions reach the elicitation handler on the call's stream, and without a handler (no
elicitation declared) the call ends with the follow-up result, finished through the follow-up
tools. `call_tool_task` cannot get a task handle there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitationHandler
from fastmcp.exceptions import ToolError
from fastmcp_tasks.client import call_tool_task

from tests.conftest import Stack

pytestmark = pytest.mark.clients

MODERN = pytest.param("2026-07-28", id="2026-07-28")
AUTO = pytest.param("auto", id="auto")
LEGACY = pytest.param("legacy", id="legacy")
ALL_MODES = [MODERN, AUTO, LEGACY]


def answering(content: dict[str, Any], asked: list[str]) -> ElicitationHandler:
    """An elicitation handler that records each message and accepts with `content`."""

    async def handler(
        message: str, response_type: Any, params: types.ElicitRequestParams, context: Any
    ) -> dict[str, Any]:
        asked.append(message)
        return content

    return handler


@asynccontextmanager
async def connected(url: str, mode: str, **options: Any) -> AsyncIterator[Client[Any]]:
    with anyio.fail_after(60):
        async with Client(url, mode=mode, timeout=30, **options) as client:
            yield client


def text_of(content: list[Any]) -> str:
    assert isinstance(content[0], types.TextContent), content
    return content[0].text


@pytest.mark.parametrize("mode", ALL_MODES)
async def test_fastmcp_lists_the_conformance_and_demo_tools(stack: Stack, mode: str) -> None:
    async with connected(stack.url, mode) as client:
        tools = await client.list_tools()
    names = {tool.name for tool in tools}
    assert {"greet", "slow_compute", "confirm_delete", "request_approval", "echo"} <= names


@pytest.mark.parametrize("mode", ALL_MODES)
async def test_fastmcp_calls_greet_synchronously(stack: Stack, mode: str) -> None:
    async with connected(stack.url, mode) as client:
        result = await client.call_tool("greet", {"name": "Grace"})
    assert text_of(result.content) == "Hello, Grace!"
    assert not result.is_error


@pytest.mark.parametrize("mode", ALL_MODES)
async def test_fastmcp_answers_a_synchronous_elicitation_through_its_handler(
    stack: Stack, mode: str
) -> None:
    asked: list[str] = []
    handler = answering({"colour": "amber"}, asked)
    async with connected(stack.url, mode, elicitation_handler=handler) as client:
        result = await client.call_tool("test_streaming_elicitation", {})
    assert asked == ["Pick a colour"]
    assert text_of(result.content) == "Elicitation answered: accept {'colour': 'amber'}"


@pytest.mark.parametrize("mode", [MODERN, AUTO])
async def test_fastmcp_runs_slow_compute_as_a_task_to_completion(stack: Stack, mode: str) -> None:
    async with connected(stack.url, mode) as client:
        task = await call_tool_task(client, "slow_compute", {"seconds": 1, "label": "fm"})
        assert task.create_result.status == "working"
        result = await task.result()
        final = await task.status()
    assert text_of(result.content) == "Computed 'fm' in 1 s"
    assert result.structured_content == {"label": "fm", "seconds": 1}
    assert final.status == "completed"


@pytest.mark.parametrize("mode", ALL_MODES)
async def test_fastmcp_call_tool_drives_a_task_transparently(stack: Stack, mode: str) -> None:
    async with connected(stack.url, mode) as client:
        result = await client.call_tool("slow_compute", {"seconds": 1, "label": "plain"})
    assert text_of(result.content) == "Computed 'plain' in 1 s"


@pytest.mark.parametrize("mode", ALL_MODES)
async def test_fastmcp_answers_a_task_question_through_its_elicitation_handler(
    stack: Stack, mode: str
) -> None:
    asked: list[str] = []
    handler = answering({"confirm": True}, asked)
    async with connected(stack.url, mode, elicitation_handler=handler) as client:
        result = await client.call_tool("confirm_delete", {"filename": "b.txt"})
    assert set(asked) == {"Delete b.txt?"}
    assert text_of(result.content) == "Deleted b.txt"
    assert result.structured_content == {"deleted": True}


@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_fastmcp_is_asked_a_task_question_once(stack: Stack, mode: str) -> None:
    # 2026-07-28: fastmcp polls tasks/get right after its tasks/update: if that read still
    # listed the answered key, the handler (a person, in a real client) would be asked again.
    # 2025-11-25: the attached run must not send the question again while the answer travels.
    asked: list[str] = []
    handler = answering({"confirm": True}, asked)
    async with connected(stack.url, mode, elicitation_handler=handler) as client:
        for name in ("d1.txt", "d2.txt", "d3.txt"):
            await client.call_tool("confirm_delete", {"filename": name})
    assert asked == ["Delete d1.txt?", "Delete d2.txt?", "Delete d3.txt?"]


async def test_fastmcp_delivers_a_rejection_with_its_reason_to_request_approval(
    stack: Stack,
) -> None:
    asked: list[str] = []
    handler = answering({"decision": "reject", "reason": "freeze week"}, asked)
    async with connected(stack.url, "2026-07-28", elicitation_handler=handler) as client:
        task = await call_tool_task(client, "request_approval", {"message": "Ship 2.0?"})
        result = await task.result()
    assert set(asked) == {"Ship 2.0?"}
    assert result.structured_content is not None
    assert result.structured_content["decision"] == "rejected"
    assert result.structured_content["reason"] == "freeze week"


@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_fastmcp_declining_a_task_question_reaches_the_tool(stack: Stack, mode: str) -> None:
    async def decline(
        message: str, response_type: Any, params: types.ElicitRequestParams, context: Any
    ) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with connected(stack.url, mode, elicitation_handler=decline) as client:
        result = await client.call_tool(
            "confirm_delete", {"filename": "c.txt"}, raise_on_error=False
        )
    assert text_of(result.content) == "Kept c.txt: deletion was not confirmed"
    assert result.structured_content == {"deleted": False}


async def test_fastmcp_in_legacy_mode_delivers_a_rejection_through_call_tool(
    stack: Stack,
) -> None:
    asked: list[str] = []
    handler = answering({"decision": "reject", "reason": "freeze week"}, asked)
    async with connected(stack.url, "legacy", elicitation_handler=handler) as client:
        result = await client.call_tool("request_approval", {"message": "Ship 2.1?"})
    assert asked == ["Ship 2.1?"]
    assert text_of(result.content) == "Decision: rejected (freeze week)"
    assert result.structured_content is not None
    assert result.structured_content["decision"] == "rejected"


async def test_fastmcp_in_legacy_mode_cannot_get_a_task_handle(stack: Stack) -> None:
    """fastmcp-tasks is modern-only: on a 2025-11-25 connection `call_tool_task` sends a plain
    `tools/call` (no `task`), which the server runs attached to completion; fastmcp then
    refuses the CallToolResult it gets instead of a task."""
    async with connected(stack.url, "legacy") as client:
        with pytest.raises(ToolError, match="did not run as a task"):
            await call_tool_task(client, "slow_compute", {"seconds": 1, "label": "no handle"})


async def test_fastmcp_in_legacy_mode_finishes_a_task_through_the_follow_up_tools(
    stack: Stack,
) -> None:
    # Without an elicitation handler fastmcp declares no elicitation: the task's question
    # cannot be relayed, the call returns the follow-up result, and the model (here the test)
    # answers with task_respond and reads the result with task_status.
    async with connected(stack.url, "legacy") as client:
        started = await client.call_tool("confirm_delete", {"filename": "fm.txt"})
        assert started.structured_content is not None
        assert started.structured_content["status"] == "input_required"
        assert started.structured_content["followUpTools"] == [
            "task_status",
            "task_respond",
            "task_cancel",
        ]
        task_id = started.structured_content["taskId"]
        answered = await client.call_tool(
            "task_respond", {"taskId": task_id, "action": "accept", "content": {"confirm": True}}
        )
        assert answered.structured_content == {"key": "confirm"}
        await stack.mcp.wait_status(task_id, "completed", within=15)
        done = await client.call_tool("task_status", {"taskId": task_id})
    assert text_of(done.content) == "Deleted fm.txt"
    assert done.structured_content == {"deleted": True}


async def test_fastmcp_in_legacy_mode_cancels_a_task_with_task_cancel(stack: Stack) -> None:
    async with connected(stack.url, "legacy") as client:
        started = await client.call_tool("confirm_delete", {"filename": "stays.txt"})
        assert started.structured_content is not None
        task_id = started.structured_content["taskId"]
        cancelled = await client.call_tool("task_cancel", {"taskId": task_id})
        assert cancelled.structured_content == {"taskId": task_id}
        await stack.mcp.wait_status(task_id, "cancelled", within=15)
        ended = await client.call_tool("task_status", {"taskId": task_id})
    assert ended.structured_content is not None
    assert ended.structured_content["status"] == "cancelled"


@pytest.mark.parametrize("mode", [MODERN, AUTO])
async def test_fastmcp_cancels_a_running_task(stack: Stack, mode: str) -> None:
    async with connected(stack.url, mode) as client:
        task = await call_tool_task(client, "slow_compute", {"seconds": 60})
        await task.cancel()
        final = await task.wait(timeout=15)
        assert final.status == "cancelled"
        with pytest.raises(ToolError, match="cancelled"):
            await task.result()
    await stack.mcp.wait_status(task.task_id, "cancelled", within=5)
