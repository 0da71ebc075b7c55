"""The open-task quota holds exactly, under concurrency and across replicas (workflows/quota.py).

Each test runs on stacks of its own task queue, so its quota workflow is its own too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import Client, WithStartWorkflowOperation, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from activities.quota import find_closed
from mcp_server.protocol.frame import errors
from mcp_server.runtime.devserver import TemporalDevServer
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.contracts.quota import RELEASE_SIGNAL
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTES
from mcp_tasks.identity import ANONYMOUS
from tests.client_2025 import Client2025
from tests.conftest import Stack, StackFactory, running_stack
from tests.mcp_client import McpClient, Reply
from tests.time_skipping import worker_of_its_own
from workflows.quota import (
    GRACE,
    IDLE,
    QUOTA_WORKFLOW,
    RECLAIM_EVERY,
    RESERVE_UPDATE,
    QuotaInput,
    QuotaWorkflow,
    ReserveAnswer,
    ReserveRequest,
    quota_workflow_id,
)

ACCEPT = {"action": "accept", "content": {"confirm": True}}


def quota_id(stack: Stack) -> str:
    return quota_workflow_id(stack.settings.task_queue, ANONYMOUS.digest)


async def creates(clients: list[McpClient], n: int) -> tuple[list[str], list[Reply]]:
    """`n` concurrent task creates spread over `clients`: the task ids, and the refusals."""
    replies = await asyncio.gather(
        *(clients[i % len(clients)].call_tool("tests_wait_forever") for i in range(n))
    )
    created = [r.result["taskId"] for r in replies if "result" in r.body]
    return created, [r for r in replies if "error" in r.body]


def assert_quota_refusal(reply: Reply, limit: int) -> None:
    assert reply.status == 429 and reply.headers["retry-after"] == "30", reply
    assert reply.error["code"] == errors.QUOTA_EXCEEDED
    assert reply.error["data"] == {"openTasks": limit, "limit": limit}
    assert f"the most this server allows per caller is {limit}" in reply.error["message"]


async def running(client: Client, task_ids: list[str]) -> int:
    described = await asyncio.gather(*(client.get_workflow_handle(t).describe() for t in task_ids))
    return sum(d.status == WorkflowExecutionStatus.RUNNING for d in described)


async def cancel_all(mcp: McpClient, task_ids: list[str]) -> None:
    await asyncio.gather(*(mcp.cancel_task(t) for t in task_ids))


async def test_60_concurrent_creates_with_a_quota_of_5_start_exactly_5(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    async with fresh_stack(max_open_tasks_per_principal=5) as stack:
        created, refused = await creates([stack.mcp], 60)
        assert (len(created), len(refused)) == (5, 55)
        for reply in refused:
            assert_quota_refusal(reply, 5)
        assert await running(temporal_client, created) == 5
        await cancel_all(stack.mcp, created)


async def test_the_quota_holds_across_two_servers_on_one_task_queue(
    temporal: TemporalDevServer, temporal_client: Client, registry: ToolRegistry
) -> None:
    # Two replicas, each with its own Temporal connection and worker, on one task queue.
    other_client = await Client.connect(temporal.address)
    shared = {"max_open_tasks_per_principal": 5, "task_queue": f"tests-{uuid.uuid4()}"}
    async with (
        running_stack(temporal_client, registry, **shared) as one,
        running_stack(other_client, registry, **shared) as two,
    ):
        created, refused = await creates([one.mcp, two.mcp], 60)
        assert (len(created), len(refused)) == (5, 55)
        for reply in refused:
            assert_quota_refusal(reply, 5)
        assert await running(temporal_client, created) == 5
        await cancel_all(one.mcp, created)


async def test_a_completed_or_cancelled_task_frees_its_slot_at_once(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(max_open_tasks_per_principal=3) as stack:
        mcp = stack.mcp
        asking = await mcp.create_task("confirm_delete", {"filename": "quota.txt"})
        waiting, _ = await creates([mcp], 2)
        assert_quota_refusal(await mcp.call_tool("tests_wait_forever"), 3)
        await mcp.wait_status(asking, "input_required")
        await mcp.update_task(asking, {"confirm": ACCEPT})
        assert (await mcp.wait_terminal(asking))["status"] == "completed"
        # Once a task reads as closed its slot is free: no waiting for visibility to catch up.
        third = await mcp.create_task("tests_wait_forever")
        assert_quota_refusal(await mcp.call_tool("tests_wait_forever"), 3)
        await mcp.cancel_task(waiting[0])
        assert (await mcp.wait_terminal(waiting[0]))["status"] == "cancelled"
        fourth = await mcp.create_task("tests_wait_forever")
        assert_quota_refusal(await mcp.call_tool("tests_wait_forever"), 3)
        await cancel_all(mcp, [waiting[1], third, fourth])


async def confirmed_delete(mcp: McpClient, filename: str) -> str:
    """A confirm_delete task, answered and completed: its id."""
    task_id = await mcp.create_task("confirm_delete", {"filename": filename})
    await mcp.wait_status(task_id, "input_required")
    await mcp.update_task(task_id, {"confirm": ACCEPT})
    assert (await mcp.wait_terminal(task_id))["status"] == "completed"
    return task_id


async def markers_and_signals(client: Client, task_id: str, quota: str) -> tuple[list[str], int]:
    """The marker names of the task's history, and the release signals its quota workflow has
    taken so far."""
    history = await client.get_workflow_handle(task_id).fetch_history()
    markers = [
        e.marker_recorded_event_attributes.marker_name
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
    ]
    signals = sum(
        e.workflow_execution_signaled_event_attributes.signal_name == RELEASE_SIGNAL
        for e in (await client.get_workflow_handle(quota).fetch_history()).events
        if e.HasField("workflow_execution_signaled_event_attributes")
    )
    return markers, signals


async def test_a_closing_task_releases_by_local_activity_in_its_last_workflow_task(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    """The release is a local activity's marker in the workflow task that closes the task, not
    a signal command the task must wait on (two events and a workflow task more)."""
    async with fresh_stack(max_open_tasks_per_principal=3) as stack:
        mcp = stack.mcp
        task_id = await confirmed_delete(mcp, "release.txt")
        history = await temporal_client.get_workflow_handle(task_id).fetch_history()
        kinds = [event.WhichOneof("attributes") for event in history.events]
        assert "signal_external_workflow_execution_initiated_event_attributes" not in kinds
        markers, signals = await markers_and_signals(temporal_client, task_id, quota_id(stack))
        assert ("core_local_activity" in markers, signals) == (True, 1), markers
        # The marker, the final state and the close are all in the last workflow task.
        last_completed = max(
            i for i, kind in enumerate(kinds) if kind == "workflow_task_completed_event_attributes"
        )
        assert "marker_recorded_event_attributes" in kinds[last_completed:]
        assert kinds[-1] == "workflow_execution_completed_event_attributes"


async def test_a_lazy_slot_sends_no_release_and_its_closed_task_never_blocks_a_create(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    """Limit 8: the first slot is granted below an eighth of the limit, so it is lazy. Its task
    sends nothing as it closes; once 8 others are asked for, the refusal the 8th would get
    finds that task closed first, and only the 9th is refused."""
    async with fresh_stack(max_open_tasks_per_principal=8) as stack:
        mcp = stack.mcp
        lazy = await confirmed_delete(mcp, "lazy.txt")
        markers, signals = await markers_and_signals(temporal_client, lazy, quota_id(stack))
        # No release (a local activity's marker, or a signal); its only marker is the patch
        # of the McpWaitingSince upsert (workflows/task_workflow.py).
        assert (markers, signals) == (["core_patch"], 0)
        waiting = [await mcp.create_task("tests_wait_forever") for _ in range(8)]
        assert_quota_refusal(await mcp.call_tool("tests_wait_forever"), 8)
        assert await running(temporal_client, waiting) == 8
        # Those 8 were granted at or above an eighth of the limit: each releases as it closes.
        await mcp.cancel_task(waiting[0])
        assert (await mcp.wait_terminal(waiting[0]))["status"] == "cancelled"
        markers, _ = await markers_and_signals(temporal_client, waiting[0], quota_id(stack))
        assert "core_local_activity" in markers
        replacement = await mcp.create_task("tests_wait_forever")
        await cancel_all(mcp, [*waiting[1:], replacement])


async def test_with_lazy_release_off_every_task_releases_as_it_closes(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    async with fresh_stack(max_open_tasks_per_principal=8, quota_lazy_release=False) as stack:
        task_id = await stack.mcp.create_task("confirm_delete", {"filename": "eager.txt"})
        await stack.mcp.wait_status(task_id, "input_required")
        await stack.mcp.cancel_task(task_id)
        assert (await stack.mcp.wait_terminal(task_id))["status"] == "cancelled"
        markers, signals = await markers_and_signals(temporal_client, task_id, quota_id(stack))
        assert ("core_local_activity" in markers, signals) == (True, 1)


async def test_a_task_terminated_through_temporal_gives_its_slot_back(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    async with fresh_stack(max_open_tasks_per_principal=2) as stack:
        mcp = stack.mcp
        first, second = (await creates([mcp], 2))[0]
        # Terminated: no workflow code runs, so no release. The refusal that would follow
        # finds it closed and drops it.
        await temporal_client.get_workflow_handle(first).terminate("operator")
        third = await mcp.create_task("tests_wait_forever")
        assert_quota_refusal(await mcp.call_tool("tests_wait_forever"), 2)
        await cancel_all(mcp, [second, third])


async def test_the_refusal_is_the_same_in_both_eras_and_for_attached_runs(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(max_open_tasks_per_principal=1) as stack:
        task_id = await stack.mcp.create_task("tests_wait_forever")
        attached = await stack.mcp.call_tool("slow_compute", {"seconds": 0}, capabilities={})
        assert_quota_refusal(attached, 1)
        legacy = Client2025(stack.http, stack.url)
        await legacy.initialize()
        extras: list[dict[str, Any]] = [{"task": {}}, {}]  # a 2025-11-25 task, then attached
        for extra in extras:
            old = await legacy.request(
                "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, **extra}
            )
            # (The status is the era's transport's: this client reads the answer as a stream.)
            assert old.error["code"] == errors.QUOTA_EXCEEDED
            assert old.error["data"] == {"openTasks": 1, "limit": 1}
        await stack.mcp.cancel_task(task_id)


async def test_the_quota_workflow_is_never_a_task(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    async with fresh_stack(max_open_tasks_per_principal=5) as stack:
        task_id = await stack.mcp.create_task("tests_wait_forever")
        quota = await temporal_client.get_workflow_handle(quota_id(stack)).describe()
        assert quota.status == WorkflowExecutionStatus.RUNNING
        assert (await stack.mcp.get_task(quota_id(stack))).error["code"] == errors.INVALID_PARAMS
        legacy = Client2025(stack.http, stack.url)
        await legacy.initialize()
        listed = [t["taskId"] for t in (await legacy.request("tasks/list")).result["tasks"]]
        assert task_id in listed and quota_id(stack) not in listed
        assert all(listed_id.startswith("mcp-task-") for listed_id in listed)
        names = {pair.key.name for pair in quota.typed_search_attributes}
        assert not names & set(SEARCH_ATTRIBUTES) and not await quota.memo()
        await stack.mcp.cancel_task(task_id)


async def test_with_quota_0_no_quota_workflow_is_started(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    async with fresh_stack(max_open_tasks_per_principal=0) as stack:
        created, refused = await creates([stack.mcp], 3)
        assert (len(created), refused) == (3, [])
        with pytest.raises(RPCError) as missing:
            await temporal_client.get_workflow_handle(quota_id(stack)).describe()
        assert missing.value.status == RPCStatusCode.NOT_FOUND
        await cancel_all(stack.mcp, created)
        for task_id in created:
            assert (await stack.mcp.wait_terminal(task_id))["status"] == "cancelled"


async def test_with_no_worker_a_create_is_a_503_to_retry_and_starts_nothing(
    fresh_stack: StackFactory, temporal_client: Client
) -> None:
    # A second of waiting for the worker instead of the default 10: the wait is the setting's.
    async with fresh_stack(max_open_tasks_per_principal=5, quota_worker_wait_s=1) as stack:
        await stack.stop_worker()
        reply = await stack.mcp.call_tool("tests_wait_forever")
        assert reply.status == 503 and reply.headers["retry-after"] == "5", reply
        assert reply.error["code"] == errors.INTERNAL_ERROR
        # The worker is named first: Temporal is fine, and on-call must not look there.
        message = reply.error["message"]
        assert message.startswith("No worker is running for the tasks: "), message
        assert f"no worker of task queue {stack.settings.task_queue!r}" in message
        assert "Temporal answered" in message and "(Temporal) is unavailable" not in message
        await stack.start_worker()
        task_id = await stack.mcp.create_task("tests_wait_forever")
        query = f'TaskQueue="{stack.settings.task_queue}" AND WorkflowType="TestsWaitForever"'
        deadline = time.monotonic() + 10
        while not (started := [w.id async for w in temporal_client.list_workflows(query)]):
            assert time.monotonic() < deadline, "the task never showed in visibility"
            await asyncio.sleep(0.1)
        assert started == [task_id]  # the refused create started no task
        await stack.mcp.cancel_task(task_id)


# ----- the quota workflow itself, driven through Temporal as the server drives it ------------


async def reserve(
    client: Client,
    queue: str,
    start: QuotaInput,
    task_ids: list[str],
    limit: int,
    lazy_below: int = 0,
) -> ReserveAnswer:
    operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        QUOTA_WORKFLOW,
        start,
        id=quota_workflow_id(queue, start.owner),
        task_queue=queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    answer: ReserveAnswer = await client.execute_update_with_start_workflow(
        RESERVE_UPDATE,
        ReserveRequest(task_ids, limit, lazy_below),
        start_workflow_operation=operation,
        result_type=ReserveAnswer,
    )
    return answer


@contextlib.asynccontextmanager
async def quota_worker(env: WorkflowEnvironment) -> AsyncIterator[tuple[Client, str]]:
    """The quota workflow and its real `find_closed` (the subject) on a worker of its own.

    Its workflows start with no time skipping (the idle timer would end them between two
    reservations); a test moves one's clock on with `env.fast_forward`."""
    with env.with_time_skipping_disabled():
        async with worker_of_its_own(env, [QuotaWorkflow], [find_closed]) as queue:
            yield env.client, queue


async def test_the_quota_workflow_continues_as_new_with_its_slots_and_stays_exact(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    async with quota_worker(time_skipping_env) as (client, queue):
        start = QuotaInput(f"owner-{uuid.uuid4().hex}", max_updates=3)
        handle = client.get_workflow_handle(quota_workflow_id(queue, start.owner))
        # 8 at a time: concurrent, and under Temporal's cap of 10 updates in flight per
        # workflow (a server replica sends one at a time per principal: tasks/quota.py).
        gate = asyncio.Semaphore(8)

        async def gated(task_id: str) -> ReserveAnswer:
            async with gate:
                return await reserve(client, queue, start, [task_id], 20)

        answers = await asyncio.gather(*(gated(f"t{i}") for i in range(30)))
        granted = [task_id for answer in answers for task_id in answer.granted]
        assert len(granted) == 20 == len(set(granted))
        again = await reserve(client, queue, start, [granted[0], "late"], 20)
        assert (again.granted, again.open_tasks) == ([granted[0]], 20)
        # Each run takes 3 reservations, then hands its slots on: this run continues another.
        history = await handle.fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        assert started.continued_execution_run_id and len(history.events) < 100


async def test_a_slot_of_a_task_that_never_started_is_reclaimed_after_the_grace(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    async with quota_worker(time_skipping_env) as (client, queue):
        start = QuotaInput(f"owner-{uuid.uuid4().hex}")  # the default grace: a minute
        handle = client.get_workflow_handle(quota_workflow_id(queue, start.owner))
        first = await reserve(client, queue, start, ["mcp-task-never-started"], 1)
        assert first.granted == ["mcp-task-never-started"]
        # Within the grace, the one it holds (unknown to Temporal) still counts.
        early = await reserve(client, queue, start, ["mcp-task-early"], 1)
        assert (early.granted, early.open_tasks) == ([], 1)
        await time_skipping_env.fast_forward(handle, GRACE + RECLAIM_EVERY + timedelta(seconds=1))
        # The quota is full; the one it holds is not known to Temporal, past the grace.
        second = await reserve(client, queue, start, ["mcp-task-next"], 1)
        assert (second.granted, second.open_tasks) == (["mcp-task-next"], 1)


async def activities_scheduled(client: Client, workflow_id: str) -> int:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return sum(e.HasField("activity_task_scheduled_event_attributes") for e in history.events)


async def activities_completed(client: Client, workflow_id: str) -> int:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return sum(e.HasField("activity_task_completed_event_attributes") for e in history.events)


async def test_lazy_slots_are_checked_in_the_background_every_lazy_batch(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """Two lazy slots of tasks Temporal does not know (past a grace of 0): the quota workflow
    checks them on its own once `lazy_batch` (2) were granted, with no refusal to prompt it."""
    async with quota_worker(time_skipping_env) as (client, queue):
        start = QuotaInput(f"owner-{uuid.uuid4().hex}", grace_s=0, lazy_batch=2)
        quota = quota_workflow_id(queue, start.owner)
        first = await reserve(client, queue, start, ["lazy-a"], 10, lazy_below=10)
        assert (first.granted, first.lazy, first.open_tasks) == (["lazy-a"], ["lazy-a"], 1)
        # One is not a batch. No wait is needed to see it: the update returned once the workflow
        # task that took it completed, and an activity the quota workflow decided on in that task
        # would be scheduled in its history already.
        assert await activities_scheduled(client, quota) == 0
        second = await reserve(client, queue, start, ["lazy-b"], 10, lazy_below=10)
        assert second.lazy == ["lazy-b"]
        deadline = time.monotonic() + 15
        while await activities_completed(client, quota) < 1:
            assert time.monotonic() < deadline, "the lazy slots were never checked"
            await asyncio.sleep(0.05)
        third = await reserve(client, queue, start, ["eager-c"], 10, lazy_below=0)
        assert (third.granted, third.lazy, third.open_tasks) == (["eager-c"], [], 1)


async def test_lazy_slots_survive_continue_as_new_and_an_idle_workflow_checks_them_and_closes(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    async with quota_worker(time_skipping_env) as (client, queue):
        start = QuotaInput(f"owner-{uuid.uuid4().hex}", max_updates=2)  # idle: an hour
        handle = client.get_workflow_handle(quota_workflow_id(queue, start.owner))
        for task_id in ("lazy-a", "lazy-b"):
            await reserve(client, queue, start, [task_id], 10, lazy_below=10)
        # Two reservations: the run continued as new, handing on both lazy slots; then, idle
        # for an hour, it checked them (unknown to Temporal, past the grace), and closed.
        await time_skipping_env.fast_forward(handle, IDLE + timedelta(minutes=1))
        result = await asyncio.wait_for(handle.result(), timeout=20)
        assert result is None
        history = await handle.fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        handed_on = json.loads(started.input.payloads[0].data)
        assert started.continued_execution_run_id
        assert (sorted(handed_on["held"]), handed_on["lazy"]) == (["lazy-a", "lazy-b"],) * 2
        assert any(e.HasField("activity_task_completed_event_attributes") for e in history.events)


async def test_a_slot_granted_again_gets_the_grace_again(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """A keyed call's new run of its expired task reserves the task id its lazy slot still
    holds: granted again, the id must not be reclaimed as never started while the new run's
    start is on its way, however old the first reservation."""
    async with quota_worker(time_skipping_env) as (client, queue):
        start = QuotaInput(f"owner-{uuid.uuid4().hex}")  # the default grace: a minute
        handle = client.get_workflow_handle(quota_workflow_id(queue, start.owner))
        first = await reserve(client, queue, start, ["mcp-task-keyed"], 1, lazy_below=1)
        assert first.lazy == ["mcp-task-keyed"]
        # Past the grace of the first reservation (and within the idle time).
        before = await time_skipping_env.get_current_time(handle)
        await time_skipping_env.fast_forward(handle, GRACE + timedelta(seconds=30))
        assert await time_skipping_env.get_current_time(handle) - before > GRACE
        again = await reserve(client, queue, start, ["mcp-task-keyed"], 1, lazy_below=1)
        assert (again.granted, again.lazy) == (["mcp-task-keyed"], ["mcp-task-keyed"])
        # The refusal runs the reclaim: the id is not known to Temporal, but within its grace.
        refused = await reserve(client, queue, start, ["mcp-task-other"], 1)
        assert (refused.granted, refused.open_tasks) == ([], 1)


async def test_an_idle_quota_workflow_closes_and_the_next_reservation_starts_it_again(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    async with quota_worker(time_skipping_env) as (client, queue):
        start = QuotaInput(f"owner-{uuid.uuid4().hex}")  # idle: an hour
        await reserve(client, queue, start, ["mcp-task-a"], 1)
        handle = client.get_workflow_handle(quota_workflow_id(queue, start.owner))
        started = await time_skipping_env.get_current_time(handle)
        await handle.signal(RELEASE_SIGNAL, "mcp-task-a")
        # Its clock runs on (unbounded) until it returns: an hour idle after the release.
        await asyncio.wait_for(time_skipping_env.fast_forward(handle), timeout=20)
        assert await handle.result() is None
        assert await time_skipping_env.get_current_time(handle) >= started + IDLE
        again = await reserve(client, queue, start, ["mcp-task-b"], 1)
        assert (again.granted, again.open_tasks) == (["mcp-task-b"], 1)
