"""The MCP Inspector's CLI (@modelcontextprotocol/inspector 2.x, `mcp-inspector --cli`) against
the real server, in each `--protocol-era`: `modern` (2026-07-28), `auto` (discover, falling
back to initialize) and `legacy` (2025-11-25; the CLI's default for an ad-hoc URL).

One invocation is one connection and one method. The CLI drives tasks through ext-tasks to
their end, but it has no way to answer a question (it declares no elicitation capability) nor
to cancel. At 2026-07-28 a tool that needs input is refused before it starts; at 2025-11-25
it runs attached to the call, which returns the follow-up result, and later invocations
finish the task through the follow-up tools, as a model would in later turns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.clients.node_runner import INSPECTOR, NodeRun, run_node
from tests.conftest import Stack

pytestmark = pytest.mark.clients

MODERN = pytest.param("modern", id="2026-07-28")
AUTO = pytest.param("auto", id="auto")
LEGACY = pytest.param("legacy", id="legacy")
ALL_ERAS = [MODERN, AUTO, LEGACY]


async def inspector(stack: Stack, home: Path, era: str | None, *args: str) -> NodeRun:
    era_flag = [] if era is None else ["--protocol-era", era]
    return await run_node(
        INSPECTOR, "--cli", stack.url, *era_flag, *args, "--format", "json", home=home
    )


async def call(stack: Stack, home: Path, era: str | None, tool: str, arguments: Any) -> NodeRun:
    return await inspector(
        stack,
        home,
        era,
        "--method",
        "tools/call",
        "--tool-name",
        tool,
        "--tool-args-json",
        json.dumps(arguments),
    )


def succeeded(run: NodeRun) -> dict[str, Any]:
    assert run.exit_code == 0, run.stderr
    result: dict[str, Any] = run.json()["result"]
    return result


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_the_inspector_lists_the_conformance_and_demo_tools(
    stack: Stack, tmp_path: Path, era: str
) -> None:
    listed = succeeded(await inspector(stack, tmp_path, era, "--method", "tools/list"))
    names = {tool["name"] for tool in listed["tools"]}
    assert {"greet", "slow_compute", "confirm_delete", "request_approval", "echo"} <= names


async def test_the_inspector_by_default_speaks_2025_11_25_to_a_url(
    stack: Stack, tmp_path: Path
) -> None:
    shown = succeeded(await inspector(stack, tmp_path, None, "--method", "initialize"))
    assert shown["protocolVersion"] == "2025-11-25"
    assert shown["serverInfo"]["name"] == "mcp-tasks-temporal"


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_the_inspector_calls_greet_synchronously(
    stack: Stack, tmp_path: Path, era: str
) -> None:
    result = succeeded(await call(stack, tmp_path, era, "greet", {"name": "Kay"}))
    assert result["content"][0]["text"] == "Hello, Kay!"
    assert result["isError"] is False


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_the_inspector_runs_slow_compute_to_its_result(
    stack: Stack, tmp_path: Path, era: str
) -> None:
    # At 2026-07-28 the CLI declares the tasks extension and polls the task ext-tasks gets back.
    result = succeeded(await call(stack, tmp_path, era, "slow_compute", {"seconds": 1}))
    assert result["content"][0]["text"] == "Computed '' in 1 s"
    assert result["structuredContent"] == {"label": "", "seconds": 1}


@pytest.mark.parametrize("era", [MODERN, AUTO])
async def test_a_tool_that_asks_is_refused_to_the_inspector_which_cannot_answer(
    stack: Stack, tmp_path: Path, era: str
) -> None:
    run = await call(stack, tmp_path, era, "confirm_delete", {"filename": "i.txt"})
    assert run.exit_code == 1
    error = run.error_json()["error"]
    assert error["message"] == (
        "Missing required client capability: tool 'confirm_delete' needs it to run"
    )


async def test_at_2025_11_25_a_tool_that_asks_the_inspector_ends_in_the_follow_up(
    stack: Stack, tmp_path: Path
) -> None:
    started = succeeded(
        await call(stack, tmp_path, "legacy", "confirm_delete", {"filename": "i.txt"})
    )
    follow_up = started["structuredContent"]
    assert follow_up["status"] == "input_required"
    assert follow_up["followUpTools"] == ["task_status", "task_respond", "task_cancel"]
    task_id = follow_up["taskId"]

    waiting = succeeded(await call(stack, tmp_path, "legacy", "task_status", {"taskId": task_id}))
    assert 'key "confirm": Delete i.txt?' in waiting["content"][0]["text"]

    answer = {"taskId": task_id, "action": "accept", "content": {"confirm": True}}
    answered = succeeded(await call(stack, tmp_path, "legacy", "task_respond", answer))
    assert answered["structuredContent"] == {"key": "confirm"}

    await stack.mcp.wait_status(task_id, "completed", within=15)
    done = succeeded(await call(stack, tmp_path, "legacy", "task_status", {"taskId": task_id}))
    assert done["content"][0]["text"] == "Deleted i.txt"
    assert done["structuredContent"] == {"deleted": True}
