"""Open-task slots reserved ahead (mcp_server/tasks/quota_prefetch.py): a create far from the
limit sends no update to the quota workflow, and the quota stays exact."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from mcp_server.tasks.quota import QuotaExceeded, QuotaReservations
from mcp_server.tasks.quota_prefetch import BATCH, PrefetchedSlots
from mcp_server.tasks.store import TemporalTaskStore, new_task_id
from mcp_tasks.contracts.task_state import TaskInput, iso_timestamp
from tests.conftest import StackFactory
from tests.mcp_client import McpClient, Reply
from tests.tasks.test_quota import (
    assert_quota_refusal,
    cancel_all,
    markers_and_signals,
    quota_id,
    running,
)


async def updates_of(client: Client, workflow_id: str) -> int:
    """How many reservations (updates) the quota workflow's current run has taken."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    accepted = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    return sum(event.event_type == accepted for event in history.events)


async def wait_for_updates(client: Client, workflow_id: str, n: int) -> None:
    deadline = time.monotonic() + 15
    while await updates_of(client, workflow_id) < n:
        assert time.monotonic() < deadline, f"the quota workflow never took {n} updates"
        await asyncio.sleep(0.05)


# What the counting tests give a reservation to be answered: on a loaded machine the server's
# 10 s may pass, and a create abandoned after its slot was granted gives the slot back
# asynchronously (one more update; a retry may meet the limit before the release lands), which
# is not what these tests count.
PATIENT = {"quota_worker_wait_s": 120.0}


async def creates_retrying_503(mcp: McpClient, n: int) -> tuple[list[str], list[Reply]]:
    """`n` concurrent creates, each retried after a 503 as a client does (on a loaded machine
    a reservation may wait longer than the server's 10 s for a worker): the task ids, and
    the refusals, all of them the quota's."""

    async def one() -> Reply:
        for _ in range(10):
            reply = await mcp.call_tool("tests_wait_forever")
            if reply.status != 503:
                return reply
            await asyncio.sleep(float(reply.headers.get("retry-after", "1")))
        raise AssertionError("still 503 after 10 tries")

    replies = await asyncio.gather(*(one() for _ in range(n)))
    created = [r.result["taskId"] for r in replies if "result" in r.body]
    return created, [r for r in replies if "error" in r.body]


async def test_far_from_the_limit_creates_take_slots_reserved_ahead_and_send_no_update(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    async with fresh_stack(max_open_tasks_per_principal=1000, **PATIENT) as stack:
        first = await stack.mcp.create_task("tests_wait_forever")
        # Its own reservation, then one refill of BATCH slots in the background.
        await wait_for_updates(temporal_client, quota_id(stack), 2)
        later = [await stack.mcp.create_task("tests_wait_forever") for _ in range(BATCH // 2 - 1)]
        assert await updates_of(temporal_client, quota_id(stack)) == 2
        assert await running(temporal_client, [first, *later]) == len(later) + 1
        assert all(task_id.startswith("mcp-task-") for task_id in later)
        await cancel_all(stack.mcp, [first, *later])
        # Far below an eighth of the limit every slot is lazy, the ones held ahead too: their
        # tasks close without a release.
        assert (await stack.mcp.wait_terminal(later[-1]))["status"] == "cancelled"
        markers, signals = await markers_and_signals(temporal_client, later[-1], quota_id(stack))
        assert (markers, signals) == ([], 0)


# Near the limit every create is an update of the one quota workflow, one after the other: on a
# loaded machine 60 of them take minutes, each reply longer than the stack's 15 s client timeout.
@pytest.mark.timeout(300)
async def test_slots_reserved_ahead_count_toward_the_limit_which_stays_exact(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    limit = 40  # the first answer leaves 39 free: enough headroom for one batch, not two
    async with fresh_stack(max_open_tasks_per_principal=limit, **PATIENT) as stack:
        first = await stack.mcp.create_task("tests_wait_forever")
        await wait_for_updates(temporal_client, quota_id(stack), 2)
        # A client that waits as long as the server may wait for the quota worker (PATIENT).
        async with httpx.AsyncClient(timeout=PATIENT["quota_worker_wait_s"] + 30) as http:
            patient = McpClient(http, stack.url)
            created, refused = await creates_retrying_503(patient, 60)
        assert (len(created) + 1, len(refused)) == (limit, 60 - limit + 1)
        for reply in refused:
            assert_quota_refusal(reply, limit)
        assert await running(temporal_client, [first, *created]) == limit
        await cancel_all(stack.mcp, [first, *created])


async def test_a_slot_reserved_ahead_and_left_unused_is_given_back_never_used(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    async with fresh_stack() as stack:
        now = [0.0]
        reservations = QuotaReservations(temporal_client, stack.settings.task_queue)
        ahead = PrefetchedSlots(reservations, new_task_id, clock=lambda: now[0])
        owner = f"owner-{uuid.uuid4().hex}"
        ahead.learn(owner, 1000, 0)
        assert ahead.take(owner, 1000) is None  # nothing yet: the call reserves for itself
        deadline = time.monotonic() + 15
        while ahead.available(owner, 1000) < BATCH:
            assert time.monotonic() < deadline, "the refill never arrived"
            await asyncio.sleep(0.05)
        ahead.learn(owner, 1000, 1000)  # no headroom any more: no further refill
        now[0] += 31  # older than MAX_AGE_S: too close to the quota workflow's grace
        assert ahead.take(owner, 1000) is None
        await ahead.drain()
        answer = await reservations.reserve_ids(owner, ["mcp-task-probe"], 1000)
        assert (answer.granted, answer.open_tasks) == (["mcp-task-probe"], 1)


def wait_forever_task(owner: str) -> TaskInput:
    return TaskInput(
        task_id=new_task_id(),
        tool="tests_wait_forever",
        arguments={},
        created_at=iso_timestamp(datetime.now(UTC)),
        ttl_ms=None,
        poll_interval_ms=1000,
        owner=owner,
    )


async def test_a_full_quota_hands_out_the_slots_this_replica_holds_ahead_before_refusing(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    """A quota full but for the slots this replica holds ahead still starts that many tasks,
    and refuses only then. (When a refill lands while a call reserves, the quota workflow may
    refuse that call although the slots are here: the store then takes one of them, the race
    the 60-create burst above hit on a loaded CI machine.)"""
    limit = 40
    async with fresh_stack() as stack:
        queue = stack.settings.task_queue
        store = TemporalTaskStore(temporal_client, queue)
        owner = f"owner-{uuid.uuid4().hex}"
        first = await store.create(wait_forever_task(owner), "TestsWaitForever", limit)
        deadline = time.monotonic() + 15
        while store.slots_held_ahead(owner, limit) < BATCH:
            assert time.monotonic() < deadline, "the refill never arrived"
            await asyncio.sleep(0.05)
        # Everything else the quota has goes elsewhere (another replica's calls, say).
        others = [f"mcp-task-elsewhere-{i}" for i in range(limit - 1 - BATCH)]
        filled = await QuotaReservations(temporal_client, queue).reserve_ids(owner, others, limit)
        assert filled.open_tasks == limit
        started = [
            await store.create(wait_forever_task(owner), "TestsWaitForever", limit)
            for _ in range(BATCH)
        ]
        assert len({s.task_id for s in started}) == BATCH
        with pytest.raises(QuotaExceeded):
            await store.create(wait_forever_task(owner), "TestsWaitForever", limit)
        for snapshot in [first, *started]:
            await temporal_client.get_workflow_handle(snapshot.task_id).terminate("test over")
