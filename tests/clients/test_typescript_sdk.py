"""The official TypeScript clients against the real server, each in one Node 22 process that runs
every case of this module (tests/clients/js/line_server.mjs), one test per case:

- @modelcontextprotocol/client 2.x (js/sdk_client.mjs) in each `versionNegotiation` mode:
  `{pin: "2026-07-28"}`, `"auto"` (discover, falling back to initialize) and `"legacy"`;
  tasks through @modelcontextprotocol/ext-tasks (SEP-2663 tasks at 2026-07-28, the in-core
  tasks of 2025-11-25 on a legacy connection, whose questions reach it on the session's GET
  stream), questions answered by its onInputRequest.
- @modelcontextprotocol/sdk 1.x (js/sdk_v1_client.mjs), a 2025-11-25 client with the in-core
  tasks of that revision (`client.experimental.tasks`).

At 2025-11-25 every task tool is listed task-optional: a plain `callTool` runs the task
attached to the call, its progress and questions on the call's SSE stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.node_runner import NodeSession
from tests.clients.pipelines import gated_pipeline
from tests.conftest import Stack

pytestmark = pytest.mark.clients

MODERN = pytest.param("modern", id="2026-07-28")
AUTO = pytest.param("auto", id="auto")
LEGACY = pytest.param("legacy", id="legacy")
ALL_ERAS = [MODERN, AUTO, LEGACY]
EXPECTED_VERSION = {"modern": "2026-07-28", "auto": "2026-07-28", "legacy": "2025-11-25"}


@pytest.fixture(scope="module")
async def ts_client() -> AsyncIterator[NodeSession]:
    """js/sdk_client.mjs: @modelcontextprotocol/client 2.x, every era in one process."""
    session = NodeSession("sdk_client.mjs")
    yield session
    await session.close()


@pytest.fixture(scope="module")
async def ts_v1_client() -> AsyncIterator[NodeSession]:
    """js/sdk_v1_client.mjs: @modelcontextprotocol/sdk 1.x."""
    session = NodeSession("sdk_v1_client.mjs")
    yield session
    await session.close()


def case(scenario: str, tool: str | None, args: Any, answer: Any) -> dict[str, Any]:
    return {"scenario": scenario, "tool": tool, "args": args or {}, "answer": answer}


async def sdk(
    client: NodeSession,
    stack: Stack,
    era: str,
    scenario: str,
    tool: str | None = None,
    args: Any = None,
    answer: Any = None,
) -> dict[str, Any]:
    """One case of js/sdk_client.mjs: SCENARIO with TOOL, its ARGS and the elicitation ANSWER."""
    run = await client.run({"url": stack.url, "era": era, **case(scenario, tool, args, answer)})
    output: dict[str, Any] = run.json()
    assert run.exit_code == 0, output
    assert output["protocolVersion"] == EXPECTED_VERSION[era]
    return output


async def sdk_v1(
    client: NodeSession,
    stack: Stack,
    scenario: str,
    tool: str | None = None,
    args: Any = None,
    answer: Any = None,
) -> dict[str, Any]:
    """One case of js/sdk_v1_client.mjs (2025-11-25 only)."""
    run = await client.run({"url": stack.url, **case(scenario, tool, args, answer)})
    output: dict[str, Any] = run.json()
    assert run.exit_code == 0, output
    assert output["protocolVersion"] == "2025-11-25"
    assert output["sessionId"], "a 2025-11-25 server hands out an Mcp-Session-Id"
    return output


def text_of(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


ACCEPT_CONFIRM = {"action": "accept", "content": {"confirm": True}}
REJECT = {"action": "accept", "content": {"decision": "reject", "reason": "out of budget"}}
COLOUR = {"action": "accept", "content": {"colour": "violet"}}
DEMO_TOOLS = {"greet", "slow_compute", "confirm_delete", "request_approval", "echo"}


# --- @modelcontextprotocol/client 2.x -------------------------------------------------------


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_the_ts_client_lists_the_conformance_and_demo_tools(
    ts_client: NodeSession, stack: Stack, era: str
) -> None:
    output = await sdk(ts_client, stack, era, "list")
    assert DEMO_TOOLS <= {tool["name"] for tool in output["tools"]}


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_the_ts_client_calls_greet_synchronously(
    ts_client: NodeSession, stack: Stack, era: str
) -> None:
    output = await sdk(ts_client, stack, era, "call", "greet", {"name": "Lin"})
    assert text_of(output["result"]) == "Hello, Lin!"


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_the_ts_client_answers_a_synchronous_elicitation_through_its_handler(
    ts_client: NodeSession, stack: Stack, era: str
) -> None:
    output = await sdk(ts_client, stack, era, "call", "test_streaming_elicitation", {}, COLOUR)
    assert [asked["message"] for asked in output["asked"]] == ["Pick a colour"]
    assert text_of(output["result"]) == "Elicitation answered: accept {'colour': 'violet'}"


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_ext_tasks_runs_slow_compute_as_a_task_to_completion(
    ts_client: NodeSession, stack: Stack, era: str
) -> None:
    output = await sdk(ts_client, stack, era, "task", "slow_compute", {"seconds": 1, "label": "ts"})
    assert output["kind"] == "task"
    assert output["outcome"] == "completed"
    assert text_of(output["result"]) == "Computed 'ts' in 1 s"
    final = await stack.mcp.wait_status(output["taskId"], "completed", within=5)
    assert final["result"]["structuredContent"] == {"label": "ts", "seconds": 1}


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_ext_tasks_answers_a_task_question_through_on_input_request(
    ts_client: NodeSession, stack: Stack, era: str
) -> None:
    output = await sdk(
        ts_client, stack, era, "task", "confirm_delete", {"filename": "ts.txt"}, ACCEPT_CONFIRM
    )
    assert {asked["message"] for asked in output["asked"]} == {"Delete ts.txt?"}
    assert output["outcome"] == "completed"
    assert text_of(output["result"]) == "Deleted ts.txt"


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_ext_tasks_delivers_a_rejection_to_request_approval(
    ts_client: NodeSession, stack: Stack, era: str
) -> None:
    output = await sdk(
        ts_client, stack, era, "task", "request_approval", {"message": "Merge?"}, REJECT
    )
    assert {asked["message"] for asked in output["asked"]} == {"Merge?"}
    assert output["result"]["structuredContent"]["decision"] == "rejected"
    assert output["result"]["structuredContent"]["reason"] == "out of budget"


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_ext_tasks_cancels_a_running_task(
    ts_client: NodeSession, stack: Stack, era: str
) -> None:
    output = await sdk(ts_client, stack, era, "cancel", "slow_compute", {"seconds": 60})
    assert output["kind"] == "task"
    assert output["outcome"] == "cancelled"
    assert output["status"] == "cancelled"
    await stack.mcp.wait_status(output["taskId"], "cancelled", within=5)


async def test_the_ts_client_in_legacy_mode_runs_a_task_tool_attached_to_call_tool(
    ts_client: NodeSession, stack: Stack
) -> None:
    # A plain callTool at 2025-11-25: the task runs attached, its statusMessage comes back as
    # progress, its question as elicitation/create on the call's stream (to the client's own
    # handler), related to the task.
    output = await sdk(
        ts_client,
        stack,
        "legacy",
        "call",
        "confirm_delete",
        {"filename": "ts2.txt"},
        ACCEPT_CONFIRM,
    )
    assert [asked["message"] for asked in output["asked"]] == ["Delete ts2.txt?"]
    task_id = output["asked"][0]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
    assert text_of(output["result"]) == "Deleted ts2.txt"
    assert output["result"]["structuredContent"] == {"deleted": True}
    assert "Waiting for confirmation to delete ts2.txt" in {
        p["message"] for p in output["progress"]
    }
    await stack.mcp.wait_status(task_id, "completed", within=5)


# --- @modelcontextprotocol/sdk 1.x: the 2025-11-25 era only -----------------------------------


async def test_the_v1_sdk_lists_tools_with_their_task_support(
    ts_v1_client: NodeSession, stack: Stack
) -> None:
    output = await sdk_v1(ts_v1_client, stack, "list")
    tools = {tool["name"]: tool for tool in output["tools"]}
    assert DEMO_TOOLS <= set(tools)
    # At 2025-11-25 every task tool is task-optional (run attached when called without `task`),
    # even the ones that are task-only at 2026-07-28; a synchronous tool is not task-capable.
    for name in ("confirm_delete", "request_approval", "slow_compute"):
        assert tools[name]["execution"]["taskSupport"] == "optional", tools[name]
    assert tools["greet"].get("execution", {}).get("taskSupport", "forbidden") == "forbidden"


async def test_the_v1_sdk_calls_greet_synchronously(
    ts_v1_client: NodeSession, stack: Stack
) -> None:
    output = await sdk_v1(ts_v1_client, stack, "call", "greet", {"name": "Lin"})
    assert text_of(output["result"]) == "Hello, Lin!"


async def test_the_v1_sdk_answers_an_elicitation_sent_on_the_call_stream(
    ts_v1_client: NodeSession, stack: Stack
) -> None:
    output = await sdk_v1(ts_v1_client, stack, "call", "test_streaming_elicitation", {}, COLOUR)
    assert [asked["message"] for asked in output["asked"]] == ["Pick a colour"]
    assert text_of(output["result"]) == "Elicitation answered: accept {'colour': 'violet'}"


async def test_the_v1_sdk_calls_slow_compute_without_a_task_and_gets_progress(
    ts_v1_client: NodeSession, stack: Stack
) -> None:
    output = await sdk_v1(
        ts_v1_client, stack, "call", "slow_compute", {"seconds": 1, "label": "v1 plain"}
    )
    assert text_of(output["result"]) == "Computed 'v1 plain' in 1 s"
    messages = [p["message"] for p in output["progress"]]
    assert messages in (
        ["Computing 'v1 plain' for 1 s"],
        ["Queued", "Computing 'v1 plain' for 1 s"],
    )
    assert [p["progress"] for p in output["progress"]] == list(range(1, len(messages) + 1))


async def test_the_v1_sdk_approves_request_approval_on_the_call_stream(
    ts_v1_client: NodeSession, stack: Stack
) -> None:
    # The scenario with the 1.x SDK: a plain callTool, the approval asked as
    # elicitation/create on the call's stream and answered by the client's own handler.
    approve = {"action": "accept", "content": {"decision": "approve"}}
    output = await sdk_v1(
        ts_v1_client, stack, "call", "request_approval", {"message": "Release?"}, approve
    )
    assert [asked["message"] for asked in output["asked"]] == ["Release?"]
    assert text_of(output["result"]) == "Decision: approved"
    assert output["result"]["structuredContent"]["decision"] == "approved"
    task_id = output["asked"][0]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
    await stack.mcp.wait_status(task_id, "completed", within=5)


async def test_the_v1_sdk_runs_slow_compute_as_a_task_and_fetches_its_result(
    ts_v1_client: NodeSession, stack: Stack
) -> None:
    output = await sdk_v1(
        ts_v1_client, stack, "task", "slow_compute", {"seconds": 1, "label": "v1"}
    )
    assert output["statuses"][-1] == "completed"
    assert text_of(output["result"]) == "Computed 'v1' in 1 s"


async def test_the_v1_sdk_answers_a_task_question_sent_on_the_tasks_result_stream(
    ts_v1_client: NodeSession, stack: Stack
) -> None:
    output = await sdk_v1(
        ts_v1_client, stack, "task", "confirm_delete", {"filename": "v1.txt"}, ACCEPT_CONFIRM
    )
    assert [asked["message"] for asked in output["asked"]] == ["Delete v1.txt?"]
    related = output["asked"][0]["_meta"]["io.modelcontextprotocol/related-task"]
    assert related == {"taskId": output["taskId"]}
    assert text_of(output["result"]) == "Deleted v1.txt"


async def test_the_v1_sdk_delivers_a_rejection_to_request_approval(
    ts_v1_client: NodeSession, stack: Stack
) -> None:
    output = await sdk_v1(
        ts_v1_client, stack, "task", "request_approval", {"message": "Tag it?"}, REJECT
    )
    assert [asked["message"] for asked in output["asked"]] == ["Tag it?"]
    assert output["result"]["structuredContent"]["decision"] == "rejected"


async def test_the_v1_sdk_cancels_a_running_task(ts_v1_client: NodeSession, stack: Stack) -> None:
    output = await sdk_v1(ts_v1_client, stack, "cancel", "slow_compute", {"seconds": 60})
    assert output["status"] == "cancelled"
    await stack.mcp.wait_status(output["taskId"], "cancelled", within=5)


# --- request_approval and deploy followed to their end ---------------------------------------

APPROVE_STEP = {"action": "accept", "content": {"approve": True}}


def step_names(result: dict[str, Any]) -> list[str]:
    return [step["name"] for step in result["structuredContent"]["steps"]]


@pytest.mark.parametrize("era", ALL_ERAS)
async def test_ext_tasks_approves_a_deploy_gate_through_on_input_request(
    ts_client: NodeSession, stack: Stack, era: str, pipelines_dir: Path
) -> None:
    arguments = {"pipeline": gated_pipeline(pipelines_dir)}
    output = await sdk(ts_client, stack, era, "task", "deploy", arguments, APPROVE_STEP)
    assert len(output["asked"]) == 1 and "Ship it?" in output["asked"][0]["message"]
    assert output["outcome"] == "completed"
    assert output["result"]["isError"] is False
    assert step_names(output["result"]) == ["build", "ship"]


async def test_the_v1_sdk_approves_a_deploy_gate_on_the_call_stream(
    ts_v1_client: NodeSession, stack: Stack, pipelines_dir: Path
) -> None:
    arguments = {"pipeline": gated_pipeline(pipelines_dir)}
    output = await sdk_v1(ts_v1_client, stack, "call", "deploy", arguments, APPROVE_STEP)
    assert len(output["asked"]) == 1 and "Ship it?" in output["asked"][0]["message"]
    assert output["result"]["isError"] is False
    assert step_names(output["result"]) == ["build", "ship"]


def followed_up(output: dict[str, Any], tool: str) -> dict[str, Any]:
    """The follow-up result the v1 SDK accepted (it checks it against the listed outputSchema),
    the answer it gave through task_respond, and the task's own result it read at the end."""
    started = output["result"]
    assert started.get("isError") is not True, started
    assert started["structuredContent"]["status"] == "input_required"
    assert f"Do not call `{tool}` again" in text_of(started)
    assert output["answered"].get("isError") is not True, output["answered"]
    final: dict[str, Any] = output["final"]
    assert final.get("isError") is not True, final
    return final


async def test_the_v1_sdk_without_elicitation_finishes_request_approval_through_follow_ups(
    ts_v1_client: NodeSession, stack: Stack
) -> None:
    answer = {"action": "accept", "content": {"decision": "approve"}}
    output = await sdk_v1(
        ts_v1_client, stack, "follow", "request_approval", {"message": "Cut it?"}, answer
    )
    final = followed_up(output, "request_approval")
    assert final["structuredContent"]["decision"] == "approved"


async def test_the_v1_sdk_without_elicitation_finishes_deploy_through_follow_ups(
    ts_v1_client: NodeSession, stack: Stack, pipelines_dir: Path
) -> None:
    arguments = {"pipeline": gated_pipeline(pipelines_dir)}
    output = await sdk_v1(ts_v1_client, stack, "follow", "deploy", arguments, APPROVE_STEP)
    assert step_names(followed_up(output, "deploy")) == ["build", "ship"]
