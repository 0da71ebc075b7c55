"""The fastmcp client with its tasks helpers (fastmcp-tasks: the io.modelcontextprotocol/tasks
client extension folded into every `Client`, `call_tool_task` and its `ToolTask` handle)
against the real server.

fastmcp negotiates like the SDK it wraps: `mode="auto"` (its default) probes
`server/discover`, `"2026-07-28"` adopts the revision, `"legacy"` runs the 2025-11-25
handshake. Its tasks are modern-only: on a legacy connection it declares no tasks support.
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

from tests.clients.node_runner import NEEDS_2025_ERA
from tests.conftest import Stack

pytestmark = pytest.mark.clients

MODERN = pytest.param("2026-07-28", id="2026-07-28")
AUTO = pytest.param("auto", id="auto")
LEGACY = pytest.param("legacy", id="legacy", marks=NEEDS_2025_ERA)
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


@pytest.mark.parametrize("mode", [MODERN, AUTO])
async def test_fastmcp_call_tool_drives_a_task_transparently(stack: Stack, mode: str) -> None:
    async with connected(stack.url, mode) as client:
        result = await client.call_tool("slow_compute", {"seconds": 1, "label": "plain"})
    assert text_of(result.content) == "Computed 'plain' in 1 s"


@pytest.mark.parametrize("mode", [MODERN, AUTO])
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


async def test_fastmcp_is_asked_a_task_question_once(stack: Stack) -> None:
    # fastmcp polls tasks/get right after its tasks/update: if that read still listed the
    # answered key, the handler (a person, in a real client) would be asked again.
    asked: list[str] = []
    handler = answering({"confirm": True}, asked)
    async with connected(stack.url, "2026-07-28", elicitation_handler=handler) as client:
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


async def test_fastmcp_declining_a_task_question_reaches_the_tool(stack: Stack) -> None:
    async def decline(
        message: str, response_type: Any, params: types.ElicitRequestParams, context: Any
    ) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with connected(stack.url, "2026-07-28", elicitation_handler=decline) as client:
        result = await client.call_tool(
            "confirm_delete", {"filename": "c.txt"}, raise_on_error=False
        )
    assert text_of(result.content) == "Kept c.txt: deletion was not confirmed"
    assert result.structured_content == {"deleted": False}


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
