"""The MCP Inspector's CLI (@modelcontextprotocol/inspector 2.x, `mcp-inspector --cli`) against
the real server, in each `--protocol-era`: `modern` (2026-07-28), `auto` (discover, falling
back to initialize) and `legacy` (2025-11-25; the CLI's default for an ad-hoc URL). Every
invocation of the module runs in one Node process (js/inspector_cli.mjs calls the CLI's runCli
as the launcher does), each with its own exit code, stdout and stderr.

One invocation is one connection and one method. The CLI drives tasks through ext-tasks to
their end, but it has no way to answer a question (it declares no elicitation capability) nor
to cancel. At 2026-07-28 a tool that asks runs as a task whose question waits for someone
who can answer (another client, the inbox, an operator), and the CLI shows its result; at
2025-11-25 it runs attached to the call, which returns the follow-up result (never an error:
the CLI checks it against the listed outputSchema and shows it), and later invocations finish
the task through the follow-up tools, as a model would in later turns.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_TOOL
from tests.clients.node_runner import NodeRun, NodeSession
from tests.clients.pipelines import gated_pipeline
from tests.conftest import Stack

pytestmark = pytest.mark.clients

MODERN = pytest.param("modern", id="2026-07-28")
AUTO = pytest.param("auto", id="auto")
LEGACY = pytest.param("legacy", id="legacy")
ALL_ERAS = [MODERN, AUTO, LEGACY]


@pytest.fixture(scope="module")
async def cli(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[NodeSession]:
    """The Inspector's CLI, every invocation of this module in one process with its own HOME."""
    session = NodeSession("inspector_cli.mjs", home=tmp_path_factory.mktemp("inspector-home"))
    yield session
    await session.close()


async def inspector(stack: Stack, cli: NodeSession, era: str | None, *args: str) -> NodeRun:
    era_flag = [] if era is None else ["--protocol-era", era]
    return await cli.run({"argv": [stack.url, *era_flag, *args, "--format", "json"]})


async def call(
    stack: Stack, cli: NodeSession, era: str | None, tool: str, arguments: Any
) -> NodeRun:
    return await inspector(
        stack,
        cli,
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
    stack: Stack, cli: NodeSession, era: str
) -> None:
    listed = succeeded(await inspector(stack, cli, era, "--method", "tools/list"))
    names = {tool["name"] for tool in listed["tools"]}
    assert {"greet", "slow_compute", "confirm_delete", "request_approval", "echo"} <= names


async def test_the_inspector_by_default_speaks_2025_11_25_to_a_url(
    stack: Stack, cli: NodeSession
) -> None:
    shown = succeeded(await inspector(stack, cli, None, "--method", "initialize"))
    assert shown["protocolVersion"] == "2025-11-25"
    assert shown["serverInfo"]["name"] == "mcp-tasks-temporal"


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_the_inspector_calls_greet_synchronously(
    stack: Stack, cli: NodeSession, era: str
) -> None:
    result = succeeded(await call(stack, cli, era, "greet", {"name": "Kay"}))
    assert result["content"][0]["text"] == "Hello, Kay!"
    assert result["isError"] is False


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_the_inspector_runs_slow_compute_to_its_result(
    stack: Stack, cli: NodeSession, era: str
) -> None:
    # At 2026-07-28 the CLI declares the tasks extension and polls the task ext-tasks gets back.
    result = succeeded(await call(stack, cli, era, "slow_compute", {"seconds": 1}))
    assert result["content"][0]["text"] == "Computed '' in 1 s"
    assert result["structuredContent"] == {"label": "", "seconds": 1}


@pytest.mark.parametrize("era", [MODERN, AUTO])
async def test_a_tool_that_asks_is_refused_to_the_inspector_which_cannot_answer(
    stack: Stack, cli: NodeSession, era: str
) -> None:
    run = await call(stack, cli, era, "confirm_delete", {"filename": "i.txt"})
    assert run.exit_code == 1
    error = run.error_json()["error"]
    assert error["message"] == (
        "Missing required client capability: tool 'confirm_delete' needs it to run"
    )


async def test_at_2025_11_25_a_tool_that_asks_the_inspector_ends_in_the_follow_up(
    stack: Stack, cli: NodeSession
) -> None:
    started = succeeded(await call(stack, cli, "legacy", "confirm_delete", {"filename": "i.txt"}))
    follow_up = started["structuredContent"]
    assert follow_up["status"] == "input_required"
    assert follow_up["followUpTools"] == ["task_status", "task_respond", "task_cancel"]
    task_id = follow_up["taskId"]

    waiting = succeeded(await call(stack, cli, "legacy", "task_status", {"taskId": task_id}))
    assert 'key "confirm": Delete i.txt?' in waiting["content"][0]["text"]

    answer = {"taskId": task_id, "action": "accept", "content": {"confirm": True}}
    answered = succeeded(await call(stack, cli, "legacy", "task_respond", answer))
    assert answered["structuredContent"] == {"key": "confirm"}

    await stack.mcp.wait_status(task_id, "completed", within=15)
    done = succeeded(await call(stack, cli, "legacy", "task_status", {"taskId": task_id}))
    assert done["content"][0]["text"] == "Deleted i.txt"
    assert done["structuredContent"] == {"deleted": True}


# --- every demo tool at the CLI's default era (2025-11-25 for a URL) --------------------------


def still_running(result: dict[str, Any], tool: str) -> str:
    """The taskId of a follow-up result, after checking it reads as one (never an error)."""
    assert result["isError"] is False, result
    follow_up = result["structuredContent"]
    assert follow_up["status"] == "input_required"
    assert follow_up["followUpTools"] == ["task_status", "task_respond", "task_cancel"]
    task_id: str = follow_up["taskId"]
    assert task_id in result["content"][0]["text"]
    assert f"Do not call `{tool}` again" in result["content"][0]["text"]
    return task_id


async def finished(stack: Stack, cli: NodeSession, task_id: str) -> dict[str, Any]:
    """`task_status` through the Inspector once the task has completed."""
    await stack.mcp.wait_status(task_id, "completed", within=20)
    return succeeded(await call(stack, cli, None, "task_status", {"taskId": task_id}))


async def test_at_its_default_era_request_approval_shows_the_task_and_is_finished_by_follow_ups(
    stack: Stack, cli: NodeSession
) -> None:
    started = succeeded(await call(stack, cli, None, "request_approval", {"message": "Go?"}))
    task_id = still_running(started, "request_approval")
    answer = {"taskId": task_id, "action": "accept", "content": {"decision": "approve"}}
    answered = succeeded(await call(stack, cli, None, "task_respond", answer))
    assert answered["isError"] is False, answered
    done = await finished(stack, cli, task_id)
    assert done["isError"] is False
    assert done["structuredContent"]["decision"] == "approved"


async def test_at_its_default_era_deploy_shows_the_task_and_is_finished_by_follow_ups(
    stack: Stack, cli: NodeSession, pipelines_dir: Path
) -> None:
    arguments = {"pipeline": gated_pipeline(pipelines_dir)}
    started = succeeded(await call(stack, cli, None, "deploy", arguments))
    task_id = still_running(started, "deploy")
    waiting = succeeded(await call(stack, cli, None, "task_status", {"taskId": task_id}))
    assert "Ship it?" in waiting["content"][0]["text"]
    answer = {"taskId": task_id, "action": "accept", "content": {"approve": True}}
    succeeded(await call(stack, cli, None, "task_respond", answer))
    done = await finished(stack, cli, task_id)
    assert done["isError"] is False
    assert [step["name"] for step in done["structuredContent"]["steps"]] == ["build", "ship"]


async def test_at_its_default_era_every_other_demo_tool_ends_in_its_result(
    stack: Stack, cli: NodeSession, import_dir: Path
) -> None:
    source = import_dir / f"rows-{uuid.uuid4().hex[:8]}.csv"
    source.write_text("id,name\n1,a\n2,b\n")
    imported = succeeded(
        await call(
            stack,
            cli,
            None,
            "import_records",
            {"source": source.name, "database": "i.db", "table": "rows", "key": "id"},
        )
    )
    assert imported["structuredContent"]["imported"] == 2
    echoed = succeeded(await call(stack, cli, None, "echo", {"text": "hi"}))
    assert echoed["structuredContent"] == {"text": "hi", "length": 2}
    job = succeeded(await call(stack, cli, None, "multi_step_job", {"steps": 1, "step_seconds": 0}))
    assert job["isError"] is False
    assert len(job["structuredContent"]["steps"]) == 1


# --- at `modern`: as far as a client without an input handler goes -------------------------


async def running_tasks(stack: Stack, tool: str) -> list[str]:
    query = f'{SEARCH_ATTRIBUTE_TOOL}="{tool}" AND ExecutionStatus="Running"'
    return [execution.id async for execution in stack.client.list_workflows(query)]


async def waiting_task(
    stack: Stack, tool: str, asks: str, before: frozenset[str] = frozenset()
) -> tuple[str, str]:
    """The taskId of the running `tool` task (not one of `before`) whose question's message
    contains `asks`, and the question's key (read by a client that can take it)."""
    with anyio.fail_after(20):
        while True:
            for task_id in await running_tasks(stack, tool):
                if task_id in before:
                    continue
                reply = await stack.mcp.get_task(task_id)
                requests = reply.result.get("inputRequests") or {}
                for key, request in requests.items():
                    if asks in request["params"]["message"]:
                        return task_id, key
            await anyio.sleep(0.3)


async def answered_elsewhere(
    stack: Stack,
    cli: NodeSession,
    tool: str,
    arguments: dict[str, Any],
    asks: str,
    answer: dict[str, Any],
) -> NodeRun:
    """Run `tool` with the CLI, which cannot answer its question: the task waits (the CLI
    polls it) until another client of the same owner answers; the CLI's run."""
    before = frozenset(await running_tasks(stack, tool))
    async with anyio.create_task_group() as group:
        runs: list[NodeRun] = []

        async def run_cli() -> None:
            runs.append(await call(stack, cli, "modern", tool, arguments))

        group.start_soon(run_cli)
        task_id, key = await waiting_task(stack, tool, asks, before)
        await stack.mcp.update_task(task_id, {key: answer})
    return runs[0]


async def test_at_modern_request_approval_waits_for_an_answer_the_cli_cannot_give(
    stack: Stack, cli: NodeSession
) -> None:
    # The CLI declares no elicitation: the question is not refused up front, it waits for
    # someone who can answer (here another client; the inbox or `mcp-tasks tasks answer`
    # alike), and the CLI prints the result.
    message = f"Go {uuid.uuid4().hex[:8]}?"
    answer = {"action": "accept", "content": {"decision": "approve"}}
    run = await answered_elsewhere(
        stack, cli, "request_approval", {"message": message}, message, answer
    )
    assert succeeded(run)["structuredContent"]["decision"] == "approved"


async def test_at_modern_deploy_waits_at_its_gate_rolls_nothing_back_and_completes(
    stack: Stack, cli: NodeSession, pipelines_dir: Path
) -> None:
    arguments = {"pipeline": gated_pipeline(pipelines_dir)}
    answer = {"action": "accept", "content": {"approve": True}}
    run = await answered_elsewhere(stack, cli, "deploy", arguments, 'step 2/2 "ship"', answer)
    result = succeeded(run)
    assert result["isError"] is False
    assert [s["status"] for s in result["structuredContent"]["steps"]] == [
        "succeeded",
        "succeeded",
    ]


async def test_at_modern_a_request_approval_with_approvers_waits_for_them_then_shows_the_result(
    stack: Stack, cli: NodeSession
) -> None:
    # With approvers the CLI's own elicitation is not needed: the task runs, the CLI polls it
    # (printing nothing meanwhile), and shows the result once an approver decided.
    message = f"Approve {uuid.uuid4().hex[:8]}?"
    arguments = {"message": message, "approvers": ["anonymous"]}
    async with anyio.create_task_group() as group:
        runs: list[NodeRun] = []

        async def run_cli() -> None:
            runs.append(await call(stack, cli, "modern", "request_approval", arguments))

        group.start_soon(run_cli)
        task_id, key = await waiting_task(stack, "request_approval", message)
        answer = {key: {"action": "accept", "content": {"decision": "approve"}}}
        await stack.mcp.update_task(task_id, answer)
    result = succeeded(runs[0])
    assert result["structuredContent"]["decision"] == "approved"
