"""What a tool call sends besides its result: a task's questions put to a 2025-11-25 client on the
call's stream (elicitation, sampling, roots; each only to a session that declared it), and a
synchronous tool's log messages (always at 2025-11-25, at 2026-07-28 only at the level the
request asked for). Real HTTP, real Temporal, a real worker."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from temporalio.client import Client

from mcp_server.protocol.core.relay import parse_input_request_id
from mcp_server.tools.loading import load_toolsets
from tests.client_2025 import Client2025
from tests.conftest import Stack, running_stack
from tests.mcp_client import VERSION, McpClient

# Long enough for a question to be answered, short enough to wait out one that never is.
SYNC_WAIT_S = 3.0
SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "Hi from the model"},
    "model": "test-model",
    "stopReason": "endTurn",
}
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}
LIST_ROOTS = {"method": "roots/list", "params": {}}


@pytest.fixture(scope="module")
async def asking(temporal_client: Client) -> AsyncIterator[Stack]:
    registry = load_toolsets("conformance", ["tests.asking_tools"])
    async with running_stack(temporal_client, registry, sync_wait_s=SYNC_WAIT_S) as stack:
        yield stack


class Host:
    """Answers the server's requests as a host would, and remembers them."""

    def __init__(self, answers: dict[str, dict[str, Any]]) -> None:
        self.answers = answers
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(request)
        return self.answers[request["method"]]


async def session(stack: Stack, capabilities: dict[str, Any], host: Host) -> Client2025:
    client = Client2025(stack.http, stack.url, capabilities=capabilities, on_request=host)
    await client.initialize()
    return client


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


# ----- a task's questions, at 2025-11-25 -----------------------------------------------------


async def test_a_sampling_question_goes_to_a_session_with_sampling_and_its_answer_ends_the_call(
    asking: Stack,
) -> None:
    host = Host({"sampling/createMessage": SAMPLED})
    client = await session(asking, {"sampling": {}}, host)
    reply = await client.request(
        "tools/call", {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}
    )
    assert text(reply.result) == "LLM response: Hi from the model"
    (asked,) = host.asked
    assert asked["method"] == "sampling/createMessage"
    assert asked["params"]["messages"][0]["content"]["text"] == "Say hi"
    assert asked["params"]["maxTokens"] == 100
    routed = parse_input_request_id(asked["id"])
    assert routed is not None and routed[1] == "sample"
    related = asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]
    assert related == {"taskId": routed[0]}


async def test_a_roots_question_goes_to_a_session_with_roots(asking: Stack) -> None:
    host = Host({"roots/list": ROOTS})
    client = await session(asking, {"roots": {}}, host)
    reply = await client.request(
        "tools/call", {"name": "tests_ask", "arguments": {"request": LIST_ROOTS}}
    )
    assert json.loads(text(reply.result)) == ROOTS
    assert [r["method"] for r in host.asked] == ["roots/list"]


async def test_a_question_the_session_cannot_answer_is_not_sent_and_the_task_waits_for_it(
    asking: Stack,
) -> None:
    host = Host({})
    client = await session(asking, {"elicitation": {}}, host)
    reply = await client.request(
        "tools/call", {"name": "tests_ask", "arguments": {"request": LIST_ROOTS}}
    )
    assert host.asked == []
    follow_up = reply.result["structuredContent"]
    assert follow_up["status"] == "input_required"
    assert follow_up["followUpTools"] == ["task_status", "task_respond", "task_cancel"]


async def test_the_elicitation_fixture_asks_the_callers_message_and_returns_the_answer(
    asking: Stack,
) -> None:
    answer = {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}
    host = Host({"elicitation/create": answer})
    client = await session(asking, {"elicitation": {}}, host)
    reply = await client.request(
        "tools/call", {"name": "test_elicitation", "arguments": {"message": "Who are you?"}}
    )
    (asked,) = host.asked
    assert asked["params"]["message"] == "Who are you?"
    assert asked["params"]["requestedSchema"]["required"] == ["username", "email"]
    assert text(reply.result).startswith("User response: action=accept")
    assert "ada@example.com" in text(reply.result)


async def test_a_task_tool_needing_an_undeclared_capability_runs_and_answers_the_follow_up_at_once(
    asking: Stack,
) -> None:
    """At 2025-11-25 nothing is refused up front: the question can still be answered through
    task_respond, so the call returns the follow-up as soon as the task waits on it."""
    host = Host({})
    client = await session(asking, {"elicitation": {}}, host)
    started = time.monotonic()
    reply = await client.request(
        "tools/call", {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}
    )
    assert host.asked == [] and time.monotonic() - started < asking.settings.sync_wait_s
    assert reply.result["structuredContent"]["status"] == "input_required"


# ----- a synchronous tool's log messages -----------------------------------------------------


async def test_a_2025_call_gets_the_tools_log_messages_on_its_stream_before_the_result(
    stack: Stack,
) -> None:
    client = await session(stack, {}, Host({}))
    reply = await client.request("tools/call", {"name": "test_tool_with_logging", "arguments": {}})
    logs = [m["params"] for m in reply.messages if m["method"] == "notifications/message"]
    assert logs == [
        {"level": "info", "data": "Tool execution started"},
        {"level": "info", "data": "Tool processing data"},
        {"level": "info", "data": "Tool execution completed"},
    ]
    assert reply.result["isError"] is False


async def call_2026(mcp: McpClient, tool: str, log_level: str | None) -> list[dict[str, Any]]:
    """tools/call at 2026-07-28, every message of its answer (JSON or SSE), the response last."""
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    if log_level is not None:
        meta["io.modelcontextprotocol/logLevel"] = log_level
    params = {"name": tool, "arguments": {}, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = mcp.headers_for("tools/call", params)
    async with mcp.http.stream("POST", mcp.url, json=body, headers=headers) as response:
        if not response.headers["content-type"].startswith("text/event-stream"):
            await response.aread()
            return [response.json()]
        return [
            json.loads(line[len("data: ") :])
            async for line in response.aiter_lines()
            if line.startswith("data: ")
        ]


async def test_a_2026_call_gets_log_messages_only_at_and_above_the_level_it_asked_for(
    mcp: McpClient,
) -> None:
    at_info = await call_2026(mcp, "test_tool_with_logging", "info")
    assert [m["params"]["level"] for m in at_info[:-1]] == ["info"] * 3
    assert all(m["method"] == "notifications/message" for m in at_info[:-1])
    assert at_info[-1]["result"]["isError"] is False
    at_warning = await call_2026(mcp, "test_tool_with_logging", "warning")
    assert len(at_warning) == 1 and "result" in at_warning[0]


async def test_a_2026_call_that_names_no_log_level_gets_no_log_message(mcp: McpClient) -> None:
    messages = await call_2026(mcp, "test_tool_with_logging", None)
    assert len(messages) == 1 and "result" in messages[0]


# ----- answers the task refuses, at 2025-11-25 -------------------------------------------------

NUMBER_FORM = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "How many?",
        "requestedSchema": {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    },
}
NOT_A_NUMBER = {"action": "accept", "content": {"n": "many"}}
A_NUMBER = {"action": "accept", "content": {"n": 3}}


class Answers(Host):
    """Gives its elicitation answers in turn (the last one again when they run out)."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        super().__init__({})
        self.queue = list(answers)

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(request)
        return self.queue.pop(0) if len(self.queue) > 1 else self.queue[0]


def asked_again(host: Host) -> None:
    """The second question is the first again, under a new id, saying what was wrong."""
    first, second = host.asked
    assert first["id"] != second["id"]
    assert parse_input_request_id(first["id"]) == parse_input_request_id(second["id"])
    assert first["params"]["message"] == "How many?"
    assert second["params"]["message"].startswith("Your previous answer was not accepted: ")
    assert second["params"]["message"].endswith("How many?")


async def test_a_refused_answer_on_an_attached_call_is_asked_again_saying_why(
    asking: Stack,
) -> None:
    host = Answers(NOT_A_NUMBER, A_NUMBER)
    client = await session(asking, {"elicitation": {}}, host)
    reply = await client.request(
        "tools/call", {"name": "tests_ask", "arguments": {"request": NUMBER_FORM}}
    )
    asked_again(host)
    assert json.loads(text(reply.result)) == A_NUMBER


async def test_answers_refused_again_and_again_end_the_attached_call_in_a_follow_up(
    asking: Stack,
) -> None:
    host = Answers(NOT_A_NUMBER)
    client = await session(asking, {"elicitation": {}}, host)
    reply = await client.request(
        "tools/call", {"name": "tests_ask", "arguments": {"request": NUMBER_FORM}}
    )
    assert len(host.asked) == 3
    assert reply.result["isError"] is False
    assert "Your answer was not accepted" in text(reply.result)
    assert reply.result["structuredContent"]["status"] == "input_required"


async def test_a_refused_answer_on_tasks_result_is_asked_again_saying_why(asking: Stack) -> None:
    host = Answers(NOT_A_NUMBER, A_NUMBER)
    client = await session(asking, {"elicitation": {}, "tasks": {}}, host)
    created = await client.request(
        "tools/call",
        {"name": "tests_ask", "arguments": {"request": NUMBER_FORM}, "task": {"ttl": 60000}},
    )
    task_id = created.result["task"]["taskId"]
    reply = await client.request("tasks/result", {"taskId": task_id})
    asked_again(host)
    assert json.loads(text(reply.result)) == A_NUMBER
