"""The official Python SDK (`mcp` 2.x) follows `request_approval` and `deploy` to their end,
in its default mode (`Client(url)`, which adopts 2026-07-28 and declares no tasks extension)
and in `mode="legacy"` (2025-11-25), with and without an elicitation callback.

- With a callback, the task's question reaches it: at 2026-07-28 through InputRequiredResult
  rounds the SDK follows by itself, at 2025-11-25 as an `elicitation/create` request on the
  call's stream. The call returns the tool's own result.
- Without one, the call returns at once the follow-up result: never `isError`, valid against
  the tool's listed outputSchema (the SDK checks it), naming the taskId and telling the model
  not to call again; the same client finishes the task through the follow-up tools.
- An answer the task refuses is asked again at once, saying what was wrong; an answer refused
  again and again ends the call in the follow-up result naming it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext, ElicitationFnT

from tests.clients.pipelines import gated_pipeline
from tests.clients.test_python_sdk import text_of, until_done
from tests.conftest import Stack

pytestmark = pytest.mark.clients

DEFAULT = pytest.param(None, id="default-mode")
LEGACY = pytest.param("legacy", id="legacy")
BOTH = [DEFAULT, LEGACY]


@asynccontextmanager
async def connected(stack: Stack, mode: str | None, **options: Any) -> AsyncIterator[Client]:
    """A client in `mode`, or in the SDK's default mode when None (no `mode=` at all)."""
    if mode is not None:
        options["mode"] = mode
    with anyio.fail_after(60):
        async with Client(stack.url, read_timeout_seconds=20, **options) as client:
            yield client


def answers(*contents: dict[str, Any], asked: list[str]) -> ElicitationFnT:
    """A callback that records each message and accepts with the next content in turn."""
    queue = list(contents)

    async def callback(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        content = queue.pop(0) if len(queue) > 1 else queue[0]
        return types.ElicitResult(action="accept", content=content)

    return callback


def still_running(result: types.CallToolResult, tool: str) -> str:
    """The taskId a follow-up result names, after checking it is one a model reads right."""
    assert not result.is_error, text_of(result)
    follow_up = result.structured_content
    assert follow_up is not None
    assert follow_up["status"] == "input_required"
    assert follow_up["followUpTools"] == ["task_status", "task_respond", "task_cancel"]
    task_id: str = follow_up["taskId"]
    assert task_id in text_of(result)
    assert f"Do not call `{tool}` again" in text_of(result)
    return task_id


@pytest.mark.parametrize("mode", BOTH)
async def test_request_approval_is_approved_through_the_elicitation_callback(
    stack: Stack, mode: str | None
) -> None:
    asked: list[str] = []
    callback = answers({"decision": "approve", "reason": "fine"}, asked=asked)
    async with connected(stack, mode, elicitation_callback=callback) as client:
        result = await client.call_tool("request_approval", {"message": "Ship 4.0?"})
    assert asked == ["Ship 4.0?"]
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["decision"] == "approved"
    assert result.structured_content["reason"] == "fine"


@pytest.mark.parametrize("mode", BOTH)
async def test_deploy_is_approved_through_the_elicitation_callback(
    stack: Stack, mode: str | None, pipelines_dir: Path
) -> None:
    asked: list[str] = []
    callback = answers({"approve": True}, asked=asked)
    async with connected(stack, mode, elicitation_callback=callback) as client:
        result = await client.call_tool("deploy", {"pipeline": gated_pipeline(pipelines_dir)})
    assert len(asked) == 1 and "Ship it?" in asked[0]
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert [step["name"] for step in result.structured_content["steps"]] == ["build", "ship"]


@pytest.mark.parametrize("mode", BOTH)
async def test_without_a_callback_request_approval_ends_in_a_follow_up_finished_by_its_tools(
    stack: Stack, mode: str | None
) -> None:
    async with connected(stack, mode) as client:
        started = await client.call_tool("request_approval", {"message": "Nobody to ask"})
        task_id = still_running(started, "request_approval")
        answered = await client.call_tool(
            "task_respond",
            {"taskId": task_id, "action": "accept", "content": {"decision": "reject"}},
        )
        assert not answered.is_error, text_of(answered)
        done = await until_done(client, task_id)
    assert done.structured_content is not None
    assert done.structured_content["decision"] == "rejected"
    await stack.mcp.wait_status(task_id, "completed", within=10)


@pytest.mark.parametrize("mode", BOTH)
async def test_without_a_callback_deploy_ends_in_a_follow_up_finished_by_its_tools(
    stack: Stack, mode: str | None, pipelines_dir: Path
) -> None:
    async with connected(stack, mode) as client:
        started = await client.call_tool("deploy", {"pipeline": gated_pipeline(pipelines_dir)})
        task_id = still_running(started, "deploy")
        waiting = await client.call_tool("task_status", {"taskId": task_id})
        assert not waiting.is_error
        assert "Ship it?" in text_of(waiting)
        answered = await client.call_tool(
            "task_respond", {"taskId": task_id, "action": "accept", "content": {"approve": True}}
        )
        assert not answered.is_error, text_of(answered)
        done = await until_done(client, task_id)
    assert not done.is_error, text_of(done)
    assert done.structured_content is not None
    assert [step["name"] for step in done.structured_content["steps"]] == ["build", "ship"]


@pytest.mark.parametrize("mode", BOTH)
async def test_a_refused_answer_is_asked_again_at_once_saying_what_was_wrong(
    stack: Stack, mode: str | None
) -> None:
    asked: list[str] = []
    callback = answers({"decision": "maybe"}, {"decision": "approve"}, asked=asked)
    async with connected(stack, mode, elicitation_callback=callback) as client:
        with anyio.fail_after(30):  # well before the attached wait of 45 s
            result = await client.call_tool("request_approval", {"message": "Tag 4.1?"})
    assert len(asked) == 2, asked
    assert asked[0] == "Tag 4.1?"
    assert asked[1].startswith("Your previous answer was not accepted: ")
    assert "decision" in asked[1] and asked[1].endswith("Tag 4.1?")
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["decision"] == "approved"


@pytest.mark.parametrize("mode", BOTH)
async def test_answers_refused_again_and_again_end_the_call_in_the_follow_up_naming_why(
    stack: Stack, mode: str | None
) -> None:
    asked: list[str] = []
    callback = answers({"decision": "maybe"}, asked=asked)
    async with connected(stack, mode, elicitation_callback=callback) as client:
        with anyio.fail_after(30):
            started = await client.call_tool("request_approval", {"message": "Tag 4.2?"})
        task_id = still_running(started, "request_approval")
        assert "Your answer was not accepted" in text_of(started)
        assert "decision" in text_of(started)
        assert len(asked) == 3
        cancelled = await client.call_tool("task_cancel", {"taskId": task_id})
        assert not cancelled.is_error
    await stack.mcp.wait_status(task_id, "cancelled", within=15)
