"""Answers are checked against the form that asked for them
(mcp_server/protocol/frame/answer_schema.py) on every path that delivers them: tasks/update, the
follow-up tool task_respond, MRTR rounds."""

from __future__ import annotations

import asyncio
import math
import os
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from mcp_server.protocol.core.relay import input_request_id
from mcp_server.protocol.frame import errors
from mcp_server.protocol.frame.answer_schema import answer_problem, form_problem
from mcp_server.runtime.operator_cli import EXIT_INVALID
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.settings import Settings
from tests.client_2025 import Client2025
from tests.conftest import Stack, running_stack
from tests.dev_process import MCP_TASKS
from tests.mcp_client import McpClient
from tests.workflows.test_deploy import THREE_STEPS, journal, pipeline
from workflows.task_workflow import elicitation

FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean"},
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "when": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "mail": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "colour": {"type": "string", "enum": ["red", "blue"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]},
        "count": {"type": "integer", "minimum": 1, "maximum": 3},
        "ratio": {"type": "number", "minimum": 0.5},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1},
        "titled": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
    },
    "required": ["approve"],
}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"approve": "true"}, 'field "approve" must be a boolean, got string'),
        ({}, 'field "approve" is required'),
        (None, 'field "approve" is required'),
        ([], "content must be an object, got array"),
        ({"approve": True, "name": 7}, 'field "name" must be a string, got number'),
        ({"approve": True, "name": "a"}, 'field "name" must be at least 2 characters long, got 1'),
        ({"approve": True, "name": "abcdef"}, 'field "name" must be at most 5 characters long'),
        ({"approve": True, "when": "2026-13-01"}, 'field "when" must be a date'),
        ({"approve": True, "when": "tomorrow"}, 'field "when" must be a date'),
        ({"approve": True, "at": "2026-01-01"}, 'field "at" must be a date-time'),
        ({"approve": True, "mail": "nobody"}, 'field "mail" must be a email'),
        ({"approve": True, "site": "no scheme"}, 'field "site" must be a uri'),
        ({"approve": True, "colour": "green"}, 'field "colour" must be one of "red", "blue"'),
        ({"approve": True, "size": "Small"}, 'field "size" must be one of "s", got "Small"'),
        ({"approve": True, "count": 1.5}, 'field "count" must be an integer, got 1.5'),
        ({"approve": True, "count": True}, 'field "count" must be an integer, got boolean'),
        ({"approve": True, "count": 4}, 'field "count" must be at most 3, got 4'),
        ({"approve": True, "count": 0}, 'field "count" must be at least 1, got 0'),
        ({"approve": True, "ratio": "1"}, 'field "ratio" must be a number, got string'),
        ({"approve": True, "ratio": 0.1}, 'field "ratio" must be at least 0.5'),
        ({"approve": True, "tags": "a"}, 'field "tags" must be an array, got string'),
        ({"approve": True, "tags": ["c"]}, 'field "tags" may only contain "a", "b", got "c"'),
        ({"approve": True, "tags": [1]}, 'field "tags" must be an array of strings'),
        ({"approve": True, "tags": ["a", "b"]}, 'field "tags" must have at most 1 items, got 2'),
        ({"approve": True, "titled": ["X"]}, 'field "titled" may only contain "x", got "X"'),
        ({"approve": True, "count": math.nan}, 'field "count" must be a finite number, got nan'),
        ({"approve": True, "ratio": math.inf}, 'field "ratio" must be a finite number, got inf'),
        ({"approve": True, "ratio": -math.inf}, 'field "ratio" must be a finite number'),
        ({"approve": True, "extra": [math.nan]}, 'field "extra" must hold only finite numbers'),
    ],
)
def test_an_answer_that_does_not_fit_the_form_names_the_field_and_the_problem(
    content: object, problem: str
) -> None:
    found = form_problem(FORM, content)
    assert found is not None and found.startswith(problem), found


def test_an_answer_that_fits_the_form_passes() -> None:
    content = {
        "approve": False,
        "name": "Ann",
        "when": "2026-12-01",
        "at": "2026-12-01T08:00:00Z",
        "mail": "ann@example.com",
        "site": "https://example.com/x",
        "colour": "red",
        "size": "s",
        "count": 3,
        "ratio": 0.5,
        "tags": ["b"],
        "titled": ["x"],
        "not_in_the_form": {"left": "alone"},
    }
    assert form_problem(FORM, content) is None
    assert form_problem(FORM, {"approve": True, "count": 2.0}) is None  # 2.0 is an integer


def test_only_an_accepted_form_answer_is_judged() -> None:
    request = elicitation("Go?", {"go": {"type": "boolean"}}, ["go"])
    assert answer_problem(request, {"action": "accept", "content": {"go": "yes"}}) is not None
    assert answer_problem(request, {"action": "decline"}) is None
    assert answer_problem(request, {"action": "cancel"}) is None
    url = {"method": "elicitation/create", "params": {"mode": "url", "url": "https://x"}}
    assert answer_problem(url, {"action": "accept"}) is None
    sampling = {"method": "sampling/createMessage", "params": {}}
    assert answer_problem(sampling, {"action": "accept", "content": {}}) is None


# ----- end to end: the task keeps waiting, and a later valid answer completes it --------------


async def test_a_string_where_the_deploy_form_wants_a_boolean_is_refused_and_nothing_is_lost(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    name, log = pipeline(pipelines_dir, THREE_STEPS)
    task_id = await mcp.create_task("deploy", {"pipeline": name})
    await mcp.wait_status(task_id, "input_required", within=10)
    wrong = {"approve-b": {"action": "accept", "content": {"approve": "true"}}}
    reply = await mcp.update_task(task_id, wrong)
    assert reply.error["code"] == errors.INVALID_PARAMS
    assert reply.error["message"] == (
        'inputResponses.approve-b: field "approve" must be a boolean, got string'
    )
    missing = await mcp.update_task(task_id, {"approve-b": {"action": "accept", "content": {}}})
    assert missing.error["message"].endswith('field "approve" is required')
    still = (await mcp.get_task(task_id)).result
    assert still["status"] == "input_required" and "approve-b" in still["inputRequests"]
    await mcp.update_task(
        task_id, {"approve-b": {"action": "accept", "content": {"approve": True}}}
    )
    done = await mcp.wait_terminal(task_id, within=20)
    assert done["result"]["isError"] is False and journal(log) == ["a", "b", "c"]


async def test_require_reason_demands_a_reason_and_an_enum_is_enforced(mcp: McpClient) -> None:
    task_id = await mcp.create_task(
        "request_approval", {"message": "Ship?", "require_reason": True}
    )
    waiting = await mcp.wait_status(task_id, "input_required", within=5)
    schema = waiting["inputRequests"]["decision"]["params"]["requestedSchema"]
    assert schema["required"] == ["decision", "reason"]
    assert schema["properties"]["reason"]["minLength"] == 1
    for content, problem in [
        ({"decision": "approve"}, 'field "reason" is required'),
        ({"decision": "approve", "reason": ""}, 'field "reason" must be at least 1 characters'),
        ({"decision": "maybe", "reason": "x"}, 'field "decision" must be one of "approve"'),
    ]:
        reply = await mcp.update_task(
            task_id, {"decision": {"action": "accept", "content": content}}
        )
        assert reply.error["code"] == errors.INVALID_PARAMS
        assert (
            problem in reply.error["message"]
            and "inputResponses.decision" in reply.error["message"]
        )
    assert (await mcp.get_task(task_id)).result["status"] == "input_required"
    answer = {"action": "accept", "content": {"decision": "approve", "reason": "green"}}
    assert (await mcp.update_task(task_id, {"decision": answer})).result["resultType"] == "complete"
    done = await mcp.wait_terminal(task_id)
    assert done["result"]["structuredContent"]["reason"] == "green"


async def test_the_follow_up_tool_refuses_an_invalid_answer_and_the_task_keeps_waiting(
    mcp: McpClient,
) -> None:
    task_id = await mcp.create_task("request_approval", {"message": "Ship?"})
    await mcp.wait_status(task_id, "input_required", within=5)
    wrong = {"taskId": task_id, "action": "accept", "content": {"decision": True}}
    refused = (await mcp.call_tool("task_respond", wrong)).result
    assert refused["isError"] is True
    assert 'field "decision" must be a string, got boolean' in refused["content"][0]["text"]
    assert (await mcp.get_task(task_id)).result["status"] == "input_required"
    right = {"taskId": task_id, "action": "accept", "content": {"decision": "reject"}}
    assert (await mcp.call_tool("task_respond", right)).result["isError"] is False
    done = await mcp.wait_terminal(task_id)
    assert done["result"]["structuredContent"]["decision"] == "rejected"


async def test_an_mrtr_round_answer_is_checked_against_its_form(asgi_mcp: McpClient) -> None:
    """In process (tests/asgi_stack.py): the check is the protocol layer's."""
    first = (await asgi_mcp.call_tool("test_tool_with_task")).result
    wrong = {"name": {"action": "accept", "content": {"name": 42}}}
    extra = {"inputResponses": wrong, "requestState": first["requestState"]}
    reply = await asgi_mcp.call_tool("test_tool_with_task", extra=extra)
    assert reply.error["code"] == errors.INVALID_PARAMS
    assert (
        reply.error["message"] == 'inputResponses.name: field "name" must be a string, got number'
    )
    right = {"name": {"action": "accept", "content": {"name": "Alice"}}}
    extra = {"inputResponses": right, "requestState": first["requestState"]}
    created = (await asgi_mcp.call_tool("test_tool_with_task", extra=extra)).result
    assert created["resultType"] == "task"


async def test_a_2025_11_25_clients_invalid_answer_is_dropped_and_the_task_keeps_waiting(
    stack: Stack, mcp: McpClient
) -> None:
    """At 2025-11-25 the answer is the client's response to the server's elicitation/create
    request: an invalid one cannot be refused to anyone, so it is dropped (logged) and the task
    keeps waiting for a valid one, which decides it."""
    client = Client2025(stack.http, stack.url)
    await client.initialize()
    created = await client.request(
        "tools/call",
        {"name": "request_approval", "arguments": {"message": "Ship?"}, "task": {}},
    )
    task_id = created.result["task"]["taskId"]
    await mcp.wait_status(task_id, "input_required", within=5)
    request_id = input_request_id(task_id, "decision")
    for answer in (
        {"action": "accept", "content": {"decision": "yes"}},
        {"action": "accept", "content": {"decision": "reject"}},
    ):
        response = {"jsonrpc": "2.0", "id": request_id, "result": answer}
        posted = await stack.http.post(stack.url, json=response, headers=client.headers())
        assert posted.status_code == 202
    done = await mcp.wait_terminal(task_id)
    assert done["result"]["structuredContent"]["decision"] == "rejected"


# ----- NaN and infinity: every answer path refuses them -----------------------

AT_MOST_TEN = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "How many replicas?",
        "requestedSchema": {
            "type": "object",
            "properties": {"replicas": {"type": "number", "maximum": 10}},
            "required": ["replicas"],
        },
    },
}


@pytest.fixture
async def asking_stack(temporal_client: Client) -> AsyncIterator[Stack]:
    """An `--auth none` stack whose `tests_ask` asks the form it is given."""
    registry = load_toolsets("conformance", ["tests.asking_tools"], Settings())
    async with running_stack(temporal_client, registry) as stack:
        yield stack


async def _asking(stack: Stack) -> str:
    task_id = await stack.mcp.create_task("tests_ask", {"request": AT_MOST_TEN})
    await stack.mcp.wait_status(task_id, "input_required", within=15)
    return task_id


@pytest.mark.parametrize("number", ["NaN", "nan", "Infinity", "-inf", "1e999"])
async def test_an_inbox_form_answered_with_a_non_finite_number_is_refused_and_waits(
    asking_stack: Stack, number: str
) -> None:
    task_id = await _asking(asking_stack)
    base = asking_stack.url.removesuffix("/mcp")
    async with httpx.AsyncClient(base_url=base, timeout=15) as http:
        page = await http.get(f"/inbox/tasks/{task_id}")
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
        assert found is not None
        answer = {
            "csrf": found.group(1),
            "key": "question",
            "action": "accept",
            "f.replicas": number,
        }
        refused = await http.post(f"/inbox/tasks/{task_id}/answer", data=answer)
    assert refused.status_code == 400
    assert "field &#34;replicas&#34; must be a finite number" in refused.text
    assert (await asking_stack.mcp.get_task(task_id)).result["status"] == "input_required"


async def test_tasks_answer_json_with_nan_is_refused_by_the_check_and_the_task_waits(
    asking_stack: Stack, temporal_client: Client
) -> None:
    """`--json` parsed by Python's json accepts NaN and Infinity; the answer check refuses
    them, whatever the CLI's own parsing does."""
    task_id = await _asking(asking_stack)
    env = {
        **os.environ,
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal_client.service_client.config.target_host,
    }
    for content in ('{"replicas": NaN}', '{"replicas": Infinity}', '{"replicas": -Infinity}'):
        refused = await asyncio.to_thread(
            subprocess.run,
            [MCP_TASKS, "tasks", "answer", task_id, "--json", content],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert refused.returncode == EXIT_INVALID, refused.stderr
        assert "replicas" in refused.stderr and "finite" in refused.stderr, refused.stderr
    assert (await asking_stack.mcp.get_task(task_id)).result["status"] == "input_required"
