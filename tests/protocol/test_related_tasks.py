"""`_meta["io.modelcontextprotocol/relatedTaskIds"]` (ext-tasks draft `RelatedTaskIds`): checked
for shape on every request, looked up as tasks/get looks a task up, the readable ids recorded in
the new task's memo for operators, the others dropped without a word (in process: the memory
store runs the same TaskState.initial the workflow starts from)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server.protocol.frame import errors
from mcp_server.protocol.frame.models import MAX_RELATED_TASK_IDS
from mcp_server.runtime.operator_views import page, shown_json
from mcp_server.runtime.tokens import add_token
from mcp_server.tasks.listing import TaskDetail
from mcp_server.tasks.snapshots import snapshot_of
from mcp_server.tasks.store import new_task_id
from mcp_tasks.contracts.task_state import TaskInput, TaskState
from tests.asgi_stack import AsgiStack, AsgiStackFactory
from tests.mcp_client import TASKS_AND_ELICITATION, VERSION, McpClient

RELATED = "io.modelcontextprotocol/relatedTaskIds"


def meta_with(related: object) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": TASKS_AND_ELICITATION,
        RELATED: related,
    }


@pytest.fixture
async def two_callers(
    fresh_asgi_stack: AsgiStackFactory, tmp_path: Path
) -> AsyncIterator[tuple[AsgiStack, McpClient, McpClient]]:
    tokens = tmp_path / "tokens.json"
    alice, bob = add_token(tokens, "alice", []), add_token(tokens, "bob", [])
    limits = {"not_found_burst": 4, "not_found_rate_per_minute": 1, "poll_burst": 1000}
    async with fresh_asgi_stack(auth="tokens", tokens_file=str(tokens), **limits) as stack:
        yield stack, as_client(stack, alice), as_client(stack, bob)


def as_client(stack: AsgiStack, token: str) -> McpClient:
    client = McpClient(stack.http, stack.url)
    client.extra_headers = {"Authorization": f"Bearer {token}"}
    return client


async def test_a_task_records_the_related_tasks_its_caller_may_read_and_drops_the_others(
    two_callers: tuple[AsgiStack, McpClient, McpClient],
) -> None:
    stack, alice, bob = two_callers
    own = await alice.create_task("tests_wait_forever")
    foreign = await bob.create_task("tests_wait_forever")
    unknown = new_task_id()
    reply = await alice.call_tool(
        "tests_wait_forever", meta=meta_with([own, foreign, unknown, own])
    )
    assert reply.status == 200 and reply.result["resultType"] == "task", reply.body
    assert RELATED not in str(reply.body), "no view a client reads shows the related ids"
    snapshot = await stack.store.get(reply.result["taskId"])
    assert snapshot is not None and snapshot.related_task_ids == [own]
    fetched = await alice.get_task(reply.result["taskId"])
    assert "relatedTaskIds" not in fetched.result


async def test_naming_only_unknown_tasks_answers_as_naming_none(
    two_callers: tuple[AsgiStack, McpClient, McpClient],
) -> None:
    stack, alice, _ = two_callers
    reply = await alice.call_tool("tests_wait_forever", meta=meta_with([new_task_id()]))
    plain = await alice.call_tool("tests_wait_forever")
    assert reply.status == plain.status == 200
    assert set(reply.result) == set(plain.result)
    snapshot = await stack.store.get(reply.result["taskId"])
    assert snapshot is not None and snapshot.related_task_ids == []


async def test_unknown_related_ids_spend_the_not_found_budget_as_tasks_get_does(
    two_callers: tuple[AsgiStack, McpClient, McpClient],
) -> None:
    _, alice, _ = two_callers
    guesses = [new_task_id() for _ in range(4)]  # the whole burst of "not found"s
    assert (await alice.call_tool("tests_wait_forever", meta=meta_with(guesses))).status == 200
    refused = await alice.call_tool("tests_wait_forever", meta=meta_with([new_task_id()]))
    assert refused.status == 429 and refused.error["code"] == errors.RATE_LIMITED, refused.body
    limited = await alice.get_task(new_task_id())
    assert limited.error["code"] == errors.RATE_LIMITED


@pytest.mark.parametrize(
    "related",
    [
        "mcp-task-1",
        [1, 2],
        [""],
        {"taskId": "mcp-task-1"},
        [f"mcp-task-{n}" for n in range(MAX_RELATED_TASK_IDS + 1)],
    ],
    ids=["a string", "numbers", "an empty id", "an object", "too many"],
)
@pytest.mark.parametrize("method", ["tools/call", "tasks/get"])
async def test_a_malformed_related_task_ids_is_invalid_params_naming_the_key(
    asgi_mcp: McpClient, related: object, method: str
) -> None:
    params = {"name": "tests_wait_forever"} if method == "tools/call" else {"taskId": "t"}
    reply = await asgi_mcp.rpc(method, params, meta=meta_with(related))
    assert reply.status == 400 and reply.error["code"] == errors.INVALID_PARAMS, reply.body
    assert RELATED in reply.error["message"]


def test_the_memo_keeps_related_task_ids_and_writes_none_when_there_are_none() -> None:
    task = TaskInput("t1", "tool", {}, "2026-12-04T10:00:00.000Z", None, 1000, "owner")
    plain = TaskState.initial(task, "Queued")
    assert "relatedTaskIds" not in plain.to_memo()
    related = TaskState.initial(TaskInput(**{**task.__dict__, "related_task_ids": ["t0"]}), "Q")
    assert related.to_memo()["relatedTaskIds"] == ["t0"]
    restored = TaskState.from_memo(related.to_memo())
    assert restored is not None and restored.related_task_ids == ["t0"]


def test_tasks_show_names_the_related_tasks() -> None:
    task = TaskInput("t1", "tool", {}, "2026-12-04T10:00:00.000Z", None, 1000, "owner")
    state = TaskState.initial(TaskInput(**{**task.__dict__, "related_task_ids": ["t0"]}), "Q")
    detail = TaskDetail("tool", "owner", "run", "Workflow", "queue", "RUNNING", 5)
    assert "relatedTaskIds: t0" in page(snapshot_of(state), detail)
    assert '"relatedTaskIds": [\n      "t0"\n    ]' in shown_json(snapshot_of(state), detail)
