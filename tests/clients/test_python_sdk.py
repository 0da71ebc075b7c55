"""The official Python SDK client (`mcp` 2.x) against the real server, in each of its modes:
`mode="2026-07-28"` (adopts the revision, no handshake), `"auto"` (`server/discover`, falling
back to `initialize`) and `"legacy"` (the 2025-11-25 `initialize` handshake and session).

The SDK has no tasks verb of its own: it declares no tasks extension, so task-optional tools
run synchronously and task-only tools are refused. Its `extensions=` seam takes a SEP-2663
client extension; the tests at the end plug in the one fastmcp-tasks ships.
"""

from __future__ import annotations

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

from tests.clients.node_runner import NEEDS_2025_ERA
from tests.conftest import Stack

pytestmark = pytest.mark.clients

MODERN = pytest.param("2026-07-28", id="2026-07-28")
AUTO = pytest.param("auto", id="auto")
LEGACY = pytest.param("legacy", id="legacy", marks=NEEDS_2025_ERA)
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


@NEEDS_2025_ERA
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


@NEEDS_2025_ERA
async def test_in_legacy_mode_a_task_only_tool_called_without_a_task_is_method_not_found(
    stack: Stack,
) -> None:
    # 2025-11-25 tasks: a tool whose execution.taskSupport is "required" must be called with
    # `task`; the SDK cannot send it (it validates every tools/call result as CallToolResult,
    # so a CreateTaskResult would fail), and the server answers -32601.
    async with connected(stack.url, "legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("confirm_delete", {"filename": "a.txt"})
    assert refused.value.code == types.METHOD_NOT_FOUND


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
