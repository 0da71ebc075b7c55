"""Idempotent tools/call (protocol/core/idempotency.py, tasks/idempotency.py): a retry with the same
Idempotency-Key, principal, tool and arguments gets the same task and starts nothing."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from mcp_server.protocol.core.idempotency import META_IDEMPOTENCY_KEY
from mcp_server.protocol.frame import errors
from mcp_server.runtime.tokens import add_token
from tests.client_2025 import Client2025
from tests.conftest import Stack, StackFactory
from tests.mcp_client import TASKS, TASKS_AND_ELICITATION, VERSION, McpClient, Reply
from tests.stdio.test_stdio import StdioHost, host, stdio_env  # noqa: F401 (fixtures)
from tests.stdio.test_stdio import meta as stdio_meta

ACCEPT = {"action": "accept", "content": {"confirm": True}}


def new_key() -> str:
    return f"retry-{uuid.uuid4()}"


async def call(
    mcp: McpClient, tool: str, arguments: dict[str, Any], key: str, **kwargs: Any
) -> Reply:
    return await mcp.call_tool(tool, arguments, headers={"Idempotency-Key": key}, **kwargs)


def meta_with(key: object, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": (
            capabilities if capabilities is not None else TASKS_AND_ELICITATION
        ),
        META_IDEMPOTENCY_KEY: key,
    }


async def tasks_of_queue(client: Client, stack: Stack, workflow_type: str, at_least: int) -> int:
    """How many executions of `workflow_type` the stack's task queue has, once visibility
    shows at least `at_least` (it lags the starts)."""
    query = f'TaskQueue="{stack.settings.task_queue}" AND WorkflowType="{workflow_type}"'
    deadline = time.monotonic() + 10
    while True:
        count = (await client.count_workflows(query)).count
        if count >= at_least or time.monotonic() > deadline:
            return count
        await asyncio.sleep(0.1)


def assert_invalid_key(reply: Reply, words: str) -> None:
    assert reply.error["code"] == errors.INVALID_PARAMS, reply.body
    assert words in reply.error["message"], reply.error


async def test_a_retry_with_the_same_key_gets_the_same_task_and_starts_nothing(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    async with fresh_stack() as stack:
        key = new_key()
        first = (await call(stack.mcp, "tests_wait_forever", {}, key)).result
        retry = (await call(stack.mcp, "tests_wait_forever", {}, key)).result
        assert first["resultType"] == retry["resultType"] == "task"
        assert retry["taskId"] == first["taskId"] and retry["createdAt"] == first["createdAt"]
        assert retry["status"] == "working"
        # Another key is another task; then visibility holds two executions, not three.
        other = await call(stack.mcp, "tests_wait_forever", {}, new_key())
        assert other.result["taskId"] != first["taskId"]
        assert await tasks_of_queue(temporal_client, stack, "TestsWaitForever", 2) == 2
        for task_id in (first["taskId"], other.result["taskId"]):
            await stack.mcp.cancel_task(task_id)


async def test_five_concurrent_retries_with_one_key_make_one_task(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    async with fresh_stack(max_open_tasks_per_principal=5) as stack:
        key = new_key()
        replies = await asyncio.gather(
            *(call(stack.mcp, "tests_wait_forever", {}, key) for _ in range(5))
        )
        task_ids = {reply.result["taskId"] for reply in replies}
        assert len(task_ids) == 1, replies
        assert await tasks_of_queue(temporal_client, stack, "TestsWaitForever", 1) == 1
        # One slot of five is held: four more tasks fit, the fifth is refused.
        others = [await stack.mcp.create_task("tests_wait_forever") for _ in range(4)]
        refused = await stack.mcp.call_tool("tests_wait_forever")
        assert refused.error["code"] == errors.QUOTA_EXCEEDED
        for task_id in [*task_ids, *others]:
            await stack.mcp.cancel_task(task_id)


async def test_the_same_key_with_other_arguments_or_another_tool_is_invalid_params(
    asgi_mcp: McpClient,
) -> None:
    key = new_key()
    first = (await call(asgi_mcp, "slow_compute", {"seconds": 30}, key)).result
    for tool, arguments in [("slow_compute", {"seconds": 31}), ("tests_wait_forever", {})]:
        reply = await call(asgi_mcp, tool, arguments, key)
        assert_invalid_key(reply, "Idempotency-Key was already used")
        assert reply.error["data"] == {"taskId": first["taskId"]}
    # Key order is not a difference: the same arguments, written in another order.
    same = await call(asgi_mcp, "slow_compute", {"label": "x", "seconds": 1}, other := new_key())
    again = await call(asgi_mcp, "slow_compute", {"seconds": 1, "label": "x"}, other)
    assert again.result["taskId"] == same.result["taskId"]
    for task_id in (first["taskId"], same.result["taskId"]):
        await asgi_mcp.cancel_task(task_id)


async def test_another_principal_with_the_same_key_gets_a_task_of_its_own(
    fresh_stack: StackFactory, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.json"
    alice, bob = add_token(tokens, "alice", []), add_token(tokens, "bob", [])
    async with fresh_stack(auth="tokens", tokens_file=str(tokens)) as stack:
        callers = []
        for token in (alice, bob):
            caller = McpClient(stack.http, stack.url)
            caller.extra_headers = {"Authorization": f"Bearer {token}"}
            callers.append(caller)
        key = new_key()
        alices = (await call(callers[0], "tests_wait_forever", {}, key)).result["taskId"]
        bobs = (await call(callers[1], "tests_wait_forever", {}, key)).result["taskId"]
        assert alices != bobs
        # Each one's retry gets its own task back.
        assert (await call(callers[0], "tests_wait_forever", {}, key)).result["taskId"] == alices
        assert (await call(callers[1], "tests_wait_forever", {}, key)).result["taskId"] == bobs
        assert (await callers[1].get_task(alices)).error["code"] == errors.INVALID_PARAMS
        assert (await callers[0].get_task(alices)).result["status"] == "working"
        await callers[0].cancel_task(alices)
        await callers[1].cancel_task(bobs)


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("", "1 to 200 characters long, not 0"),
        ("k" * 201, "1 to 200 characters long, not 201"),
        ("caf\u00e9", "printable ASCII"),
        ("tab\there", "printable ASCII"),
        (42, "must be a string"),
    ],
    ids=["empty", "too-long", "non-ascii", "control", "not-a-string"],
)
async def test_a_bad_key_is_invalid_params(asgi_mcp: McpClient, key: object, words: str) -> None:
    reply = await asgi_mcp.call_tool("tests_wait_forever", {}, meta=meta_with(key))
    assert_invalid_key(reply, words)


async def test_a_bad_header_key_a_repeated_one_or_one_that_differs_from_meta_is_invalid(
    asgi_mcp: McpClient,
) -> None:
    assert_invalid_key(await call(asgi_mcp, "tests_wait_forever", {}, "k" * 201), "not 201")
    assert_invalid_key(await call(asgi_mcp, "tests_wait_forever", {}, ""), "not 0")
    differs = await call(asgi_mcp, "tests_wait_forever", {}, "a", meta=meta_with("b"))
    assert_invalid_key(differs, "differ")
    repeated = await asgi_mcp.http.post(
        asgi_mcp.url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "tests_wait_forever", "arguments": {}, "_meta": meta_with(None)},
        },
        headers=[
            *asgi_mcp.headers_for("tools/call", {"name": "tests_wait_forever"}).items(),
            ("Idempotency-Key", "a"),
            ("Idempotency-Key", "b"),
        ],
    )
    assert repeated.json()["error"]["code"] == errors.INVALID_PARAMS
    assert "sent 2 times" in repeated.json()["error"]["message"]


async def test_the_key_in_meta_works_and_agrees_with_the_header(asgi_mcp: McpClient) -> None:
    key = new_key()
    by_meta = await asgi_mcp.call_tool("tests_wait_forever", {}, meta=meta_with(key))
    by_header = await call(asgi_mcp, "tests_wait_forever", {}, key)
    both = await call(asgi_mcp, "tests_wait_forever", {}, key, meta=meta_with(key))
    task_id = by_meta.result["taskId"]
    assert by_header.result["taskId"] == both.result["taskId"] == task_id
    await asgi_mcp.cancel_task(task_id)


async def test_a_retry_after_the_task_closed_gets_the_closed_task(asgi_mcp: McpClient) -> None:
    key = new_key()
    task_id = (await call(asgi_mcp, "confirm_delete", {"filename": "idem.txt"}, key)).result[
        "taskId"
    ]
    await asgi_mcp.wait_status(task_id, "input_required")
    await asgi_mcp.update_task(task_id, {"confirm": ACCEPT})
    closed = await asgi_mcp.wait_terminal(task_id)
    assert closed["status"] == "completed"
    retry = (await call(asgi_mcp, "confirm_delete", {"filename": "idem.txt"}, key)).result
    assert retry["taskId"] == task_id and retry["status"] == "completed"
    assert retry["createdAt"] == closed["createdAt"]


async def test_a_retry_never_takes_a_second_quota_slot(fresh_stack: StackFactory) -> None:
    async with fresh_stack(max_open_tasks_per_principal=1) as stack:
        key = new_key()
        task_id = (await call(stack.mcp, "tests_wait_forever", {}, key)).result["taskId"]
        for _ in range(2):  # the task holds the one slot; its retries are not refused
            assert (await call(stack.mcp, "tests_wait_forever", {}, key)).result[
                "taskId"
            ] == task_id
        assert (await stack.mcp.call_tool("tests_wait_forever")).error["code"] == (
            errors.QUOTA_EXCEEDED
        )
        await stack.mcp.cancel_task(task_id)
        await stack.mcp.wait_status(task_id, "cancelled")
        retry = await call(stack.mcp, "tests_wait_forever", {}, key)
        assert retry.result["taskId"] == task_id and retry.result["status"] == "cancelled"
        # The retry of the closed task left the one slot free.
        fresh = await stack.mcp.create_task("tests_wait_forever")
        await stack.mcp.cancel_task(fresh)


async def test_the_key_works_at_2025_11_25_for_tasks_and_attached_runs(stack: Stack) -> None:
    legacy = Client2025(stack.http, stack.url)
    await legacy.initialize()
    key = new_key()
    params = {
        "name": "slow_compute",
        "arguments": {"seconds": 30},
        "task": {},
        "_meta": {META_IDEMPOTENCY_KEY: key},
    }
    first = (await legacy.request("tools/call", params)).result["task"]
    retry = (await legacy.request("tools/call", params)).result["task"]
    assert retry["taskId"] == first["taskId"]
    other = await legacy.request("tools/call", {**params, "arguments": {"seconds": 29}})
    assert other.error["code"] == errors.INVALID_PARAMS
    await stack.mcp.cancel_task(first["taskId"])


async def test_a_host_without_tasks_retrying_an_attached_run_follows_the_same_task(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(sync_wait_s=0.5) as stack:
        key = new_key()
        meta = meta_with(key, capabilities={})
        replies = [
            await stack.mcp.call_tool("slow_compute", {"seconds": 30}, meta=meta) for _ in range(2)
        ]
        named = [reply.result["structuredContent"]["taskId"] for reply in replies]
        assert named[0] == named[1], replies
        await stack.mcp.cancel_task(named[0])


@pytest.mark.slow
async def test_on_stdio_the_key_in_meta_gets_the_same_task(host: StdioHost) -> None:  # noqa: F811
    key = new_key()
    params = {
        "name": "slow_compute",
        "arguments": {"seconds": 30},
        "_meta": stdio_meta(TASKS, **{META_IDEMPOTENCY_KEY: key}),
    }
    first = (await host.request("tools/call", params)).result
    retry = (await host.request("tools/call", params)).result
    assert first["resultType"] == "task" and retry["taskId"] == first["taskId"]
    other = await host.request("tools/call", {**params, "arguments": {"seconds": 29}})
    assert other.error["code"] == errors.INVALID_PARAMS
    cancel = {"taskId": first["taskId"], "_meta": stdio_meta(TASKS)}
    await host.request("tasks/cancel", cancel)
