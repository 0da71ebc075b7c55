"""Per-principal rate limits: tasks/update, tasks/cancel (and task_respond, task_cancel), and
lookups that end "not found", counted alike whether the task is missing or someone else's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server.protocol.frame import errors
from mcp_server.protocol.limits.rates import PrincipalLimiter
from mcp_server.runtime.tokens import add_token
from mcp_server.tasks.store import new_task_id
from tests.asgi_stack import AsgiStack, AsgiStackFactory
from tests.mcp_client import NO_CAPABILITIES, McpClient, Reply

NOT_FOUND = {"code": errors.INVALID_PARAMS, "message": errors.TASK_NOT_FOUND_MESSAGE}


def assert_limited(reply: Reply) -> None:
    """The rate-limit draft's shape with this server's code: RATE_LIMITED, HTTP 429,
    data.retryAfterMs with a Retry-After that agrees, data.limit and data.remaining with the
    RateLimit-Limit and RateLimit-Remaining headers that match them."""
    assert reply.status == 429 and reply.error["code"] == errors.RATE_LIMITED, reply.body
    data = reply.error["data"]
    assert data["retryAfterMs"] > 0
    assert int(reply.headers["retry-after"]) == max(1, -(-data["retryAfterMs"] // 1000))
    assert data["limit"] >= 1 and data["remaining"] == 0
    assert int(reply.headers["ratelimit-limit"]) == data["limit"]
    assert int(reply.headers["ratelimit-remaining"]) == data["remaining"]


def test_a_bucket_per_principal_refills_at_its_rate() -> None:
    now = [0.0]
    limiter = PrincipalLimiter("cancellations", per_minute=60, burst=3, clock=lambda: now[0])
    for _ in range(3):
        limiter.take("p")
    with pytest.raises(errors.McpError) as caught:
        limiter.take("p")
    assert caught.value.code == errors.RATE_LIMITED and caught.value.http_status == 429
    assert caught.value.data == {"retryAfterMs": 1000, "limit": 3, "remaining": 0}
    assert caught.value.headers == {
        "Retry-After": "1",
        "RateLimit-Limit": "3",
        "RateLimit-Remaining": "0",
    }
    limiter.take("q")  # another principal has its own bucket
    now[0] += 1.0  # one a second
    limiter.take("p")
    limiter.give_back("p")
    limiter.take("p")
    with pytest.raises(errors.McpError):
        limiter.take("p")


def test_a_client_within_the_rate_is_never_limited() -> None:
    now = [0.0]
    limiter = PrincipalLimiter("answers", per_minute=600, burst=100, clock=lambda: now[0])
    for _ in range(10_000):
        now[0] += 0.1
        limiter.take("p")
    # ...and its burst is still there afterwards: half of it at once is not refused.
    for _ in range(limiter.burst // 2):
        limiter.take("p")


@pytest.fixture
async def callers(
    fresh_asgi_stack: AsgiStackFactory, tmp_path: Path
) -> AsyncIterator[tuple[McpClient, McpClient]]:
    tokens = tmp_path / "tokens.json"
    alice, bob = add_token(tokens, "alice", []), add_token(tokens, "bob", [])
    limits = {"update_burst": 3, "cancel_burst": 3, "not_found_burst": 4, "poll_burst": 1000}
    rates = {
        "update_rate_per_minute": 1,
        "cancel_rate_per_minute": 1,
        "not_found_rate_per_minute": 1,
    }
    async with fresh_asgi_stack(auth="tokens", tokens_file=str(tokens), **limits, **rates) as stack:
        yield as_client(stack, alice), as_client(stack, bob)


def as_client(stack: AsgiStack, token: str) -> McpClient:
    client = McpClient(stack.http, stack.url)
    client.extra_headers = {"Authorization": f"Bearer {token}"}
    return client


async def test_tasks_update_and_task_respond_share_a_rate_limit(
    callers: tuple[McpClient, McpClient],
) -> None:
    alice, bob = callers
    task_id = await alice.create_task("tests_wait_forever")
    answer = {"k": {"action": "decline"}}
    for _ in range(2):
        assert (await alice.update_task(task_id, answer)).result["resultType"] == "complete"
    respond = {"taskId": task_id, "action": "decline"}
    replies = [await alice.call_tool("task_respond", respond, capabilities=NO_CAPABILITIES)]
    replies.append(await alice.update_task(task_id, answer))
    assert "result" in replies[0].body
    assert_limited(replies[1])
    assert "tasks/update" in replies[1].error["message"]
    assert_limited(await alice.call_tool("task_respond", respond, capabilities=NO_CAPABILITIES))
    # Bob's bucket is his own.
    assert (await bob.update_task(new_task_id(), answer)).error == NOT_FOUND
    await alice.cancel_task(task_id)


async def test_tasks_cancel_and_task_cancel_share_a_rate_limit(
    callers: tuple[McpClient, McpClient],
) -> None:
    alice, _ = callers
    task_id = await alice.create_task("tests_wait_forever")
    assert (await alice.cancel_task(task_id)).result["resultType"] == "complete"
    cancel = {"taskId": task_id}
    followup = await alice.call_tool("task_cancel", cancel, capabilities=NO_CAPABILITIES)
    assert "result" in followup.body
    assert "result" in (await alice.cancel_task(task_id)).body
    assert_limited(await alice.cancel_task(task_id))
    assert_limited(await alice.call_tool("task_cancel", cancel, capabilities=NO_CAPABILITIES))


async def test_not_found_lookups_are_limited_alike_whether_missing_or_foreign(
    callers: tuple[McpClient, McpClient],
) -> None:
    alice, bob = callers
    alices = await alice.create_task("tests_wait_forever")
    for _ in range(10):  # lookups that find the task never count
        assert (await alice.get_task(alices)).result["taskId"] == alices

    async def lookup(method: str, task_id: str) -> Reply:
        if method == "task_status":
            status = {"taskId": task_id}
            return await bob.call_tool("task_status", status, capabilities=NO_CAPABILITIES)
        return await bob.rpc(method, {"taskId": task_id})

    answers: list[Any] = []
    for method, target in [
        ("tasks/get", alices),
        ("tasks/get", new_task_id()),
        ("tasks/cancel", alices),
        ("task_status", new_task_id()),
    ]:
        reply = await lookup(method, target)
        answers.append(reply.body["error"] if "error" in reply.body else reply.result["isError"])
    assert answers == [NOT_FOUND, NOT_FOUND, NOT_FOUND, True]
    # Four "not found" answers, two foreign and two missing: the burst is spent either way.
    assert_limited(await lookup("tasks/get", alices))
    assert_limited(await lookup("tasks/get", new_task_id()))
    limited = await lookup("tasks/get", "x" * 1000)
    assert_limited(limited)
    assert "not found" in limited.error["message"]
    # Alice still reads her own task: the buckets are per principal.
    assert (await alice.get_task(alices)).result["status"] == "working"
    await alice.cancel_task(alices)


async def test_a_tasks_get_polled_too_fast_is_refused_in_the_same_shape_with_its_interval(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    async with fresh_asgi_stack(poll_burst=2) as stack:
        task_id = await stack.mcp.create_task("tests_wait_forever")
        replies = [await stack.mcp.get_task(task_id) for _ in range(3)]
    assert [reply.status for reply in replies[:2]] == [200, 200]
    assert_limited(replies[2])
    data = replies[2].error["data"]
    assert data["limit"] == 2 and data["pollIntervalMs"] > 0
