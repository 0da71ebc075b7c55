"""A task past its TTL answers -32602 and is gone from Temporal (tasks/expiry.py): deleted by
the read that finds it expired, or by the workers' sweeper when nobody reads it again."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.protocol.frame import errors
from mcp_server.tasks.expiry import run_sweeper
from mcp_server.tasks.ttl import closed_expired
from mcp_tasks.contracts.task_state import parse_timestamp
from tests.conftest import StackFactory
from tests.fixture_tools import SHORT_TTL_MS
from tests.mcp_client import McpClient


async def gone_from_temporal(client: Client, task_id: str, within: float) -> bool:
    """Whether describe() answers NOT_FOUND for the task within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            await client.get_workflow_handle(task_id).describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return True
            raise
        await asyncio.sleep(0.2)
    return False


async def closed_short_lived(mcp: McpClient) -> str:
    """A closed task of a tool with a 3 s TTL (completed; or, on a machine so loaded that no
    worker ran it within its TTL, timed out: closed all the same)."""
    task_id = await mcp.create_task("tests_short_lived")
    await mcp.wait_terminal(task_id)
    return task_id


def test_a_closed_task_expires_at_its_ttl_or_a_grace_after_a_late_close() -> None:
    created = "2026-08-01T10:30:00.000Z"
    at = parse_timestamp
    early = "2026-08-01T10:30:01.000Z"
    assert not closed_expired(created, early, 3000, at("2026-08-01T10:30:02.999Z"))
    assert closed_expired(created, early, 3000, at("2026-08-01T10:30:03.000Z"))
    late = "2026-08-01T10:30:02.900Z"  # closed 100 ms before its TTL: 1.5 s of grace
    assert not closed_expired(created, late, 3000, at("2026-08-01T10:30:04.399Z"))
    assert closed_expired(created, late, 3000, at("2026-08-01T10:30:04.400Z"))
    assert not closed_expired(created, late, None, at("2099-01-01T00:00:00.000Z"))


@pytest.mark.slow
@pytest.mark.timeout(180)  # 25-55 s measured alone: too close to the default 90 s under load
async def test_expired_tasks_are_deleted_from_temporal_when_read_or_by_the_sweeper(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    """Both ways at once, as Temporal deletes a closed run in the background (in 30 to 60 s
    on the dev server): a task read past its TTL, and one nobody reads again."""
    async with fresh_stack() as stack:
        mcp = stack.mcp
        read = await mcp.create_task("tests_times_out")  # TTL 3 s, closed by Temporal then
        unread = await closed_short_lived(mcp)  # TTL 3 s, completes at once
        forever = await mcp.create_task("tests_wait_forever")  # no TTL
        # The sweeper knows only the unread task's tool: the read task is the read's to delete.
        ttls = {"tests_short_lived": SHORT_TTL_MS, "tests_wait_forever": SHORT_TTL_MS}
        sweeper = asyncio.create_task(
            run_sweeper(temporal_client, stack.settings.task_queue, lambda: ttls, every_s=0.5)
        )
        try:
            deadline = time.monotonic() + 3 * SHORT_TTL_MS / 1000 + 10
            while (reply := await mcp.get_task(read)).body.get("result"):
                assert time.monotonic() < deadline, "the task never expired"
                await asyncio.sleep(0.2)
            assert reply.error["code"] == errors.INVALID_PARAMS
            gone = await asyncio.gather(
                gone_from_temporal(temporal_client, read, within=120),
                gone_from_temporal(temporal_client, unread, within=120),
            )
            assert list(gone) == [True, True]
            # Dozens of sweeps later, a running task (past the TTL the sweeper was told) stays.
            assert (await mcp.get_task(forever)).result["status"] == "working"
        finally:
            sweeper.cancel()
        assert (await mcp.get_task(read)).error["code"] == errors.INVALID_PARAMS
        await mcp.cancel_task(forever)


async def test_an_expired_keyed_task_frees_its_key_for_a_new_task(
    mcp: McpClient, temporal_client: Client
) -> None:
    key = {"Idempotency-Key": f"expiry-{uuid.uuid4()}"}
    first = (await mcp.call_tool("tests_short_lived", headers=key)).result
    await mcp.wait_terminal(first["taskId"])
    retry = (await mcp.call_tool("tests_short_lived", headers=key)).result
    assert retry["taskId"] == first["taskId"] and retry["createdAt"] == first["createdAt"]
    await asyncio.sleep(SHORT_TTL_MS / 1000)  # past the TTL of a task that closed at once
    again = (await mcp.call_tool("tests_short_lived", headers=key)).result
    assert again["taskId"] == first["taskId"] and again["createdAt"] > first["createdAt"]
    await mcp.wait_terminal(again["taskId"])
