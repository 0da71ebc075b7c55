"""Every path that reads, answers or looks up a task goes through the caller's limits, as
docs/operations/security.md says: the 2025-11-25 `tasks/get` and the follow-up tool
`task_status` are polls like a 2026-07-28 `tasks/get`, and the multi-round-trip resume of an
attached task (`tools/call` with `requestState` and answers) spends the `tasks/update` bucket.

Attacks: before, 2025-11-25 `tasks/get` and `task_status` took no poll limit, and the resume
took 150 answers right after `tasks/update` was refused with 429."""

from __future__ import annotations

from mcp_server.protocol.frame import errors
from tests.asgi_stack import AsgiStackFactory
from tests.client_2025 import Client2025
from tests.conftest import StackFactory
from tests.mcp_client import NO_CAPABILITIES
from tests.protocol.test_attached_rounds import (
    ELICITATION,
    NOT_AN_ANSWER,
    ask_approval,
    task_named_by,
)
from tests.protocol.test_rate_limits import assert_limited


async def test_a_2025_tasks_get_polled_too_fast_is_refused(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    async with fresh_asgi_stack(poll_burst=2) as stack:
        client = Client2025(stack.http, stack.url)
        await client.initialize()
        created = await client.request(
            "tools/call",
            {"name": "tests_wait_forever", "arguments": {}, "task": {}},
        )
        task_id = created.result["task"]["taskId"]
        replies = [await client.request("tasks/get", {"taskId": task_id}) for _ in range(3)]
        assert all("result" in reply.body for reply in replies[:2])
        error = replies[2].body["error"]
        assert error["code"] == errors.RATE_LIMITED and error["data"]["pollIntervalMs"] > 0
        assert (await stack.mcp.cancel_task(task_id)).status in (200, 404)


async def test_task_status_polled_too_fast_is_refused(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    async with fresh_asgi_stack(poll_burst=2) as stack:
        task_id = await stack.mcp.create_task("tests_wait_forever")
        status = {"taskId": task_id}
        replies = [
            await stack.mcp.call_tool("task_status", status, capabilities=NO_CAPABILITIES)
            for _ in range(3)
        ]
        assert all("result" in reply.body for reply in replies[:2])
        assert_limited(replies[2])
        await stack.mcp.cancel_task(task_id)


async def test_the_resume_of_an_attached_round_spends_the_answers_bucket(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(update_burst=2, update_rate_per_minute=1) as stack:
        mcp = stack.mcp
        first = await ask_approval(mcp, "Limited?")
        ((key, _),) = first["inputRequests"].items()
        task_id = task_named_by(first["requestState"])
        for _ in range(2):  # spend the bucket (refused answers count as much as any)
            assert (await mcp.update_task(task_id, {key: NOT_AN_ANSWER})).status == 400
        assert_limited(await mcp.update_task(task_id, {key: NOT_AN_ANSWER}))
        extra = {"inputResponses": {key: NOT_AN_ANSWER}, "requestState": first["requestState"]}
        resumed = await mcp.call_tool(
            "request_approval", {"message": "Limited?"}, capabilities=ELICITATION, extra=extra
        )
        assert_limited(resumed)
        await mcp.cancel_task(task_id)
