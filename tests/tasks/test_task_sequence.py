"""A task's sequence number (mcp_server/tasks/sequence.py) keeps growing when the task continues
as new, though each new run numbers its events from 1 again: time skipping, a worker of its
own, a workflow that continues as new twice and then waits. A watcher's followers start from
the newest read (in process). test_subscriptions.py checks the numbers a real stream sends."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

from mcp_server.tasks.description import describe
from mcp_server.tasks.sequence import Sequences
from tests.asgi_stack import AsgiStack
from tests.mcp_client import McpClient
from tests.time_skipping import worker_of_its_own

RPC_TIMEOUT = timedelta(seconds=5)


@workflow.defn(sandboxed=False)
class ContinuesTwice:
    @workflow.run
    async def run(self, runs_before: int) -> None:
        await workflow.sleep(timedelta(seconds=1))
        if runs_before < 2:
            workflow.continue_as_new(runs_before + 1)
        await workflow.wait_condition(lambda: False)


async def test_the_sequence_keeps_growing_across_runs_of_a_task(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    client = time_skipping_env.client
    sequences = Sequences(client, RPC_TIMEOUT)
    async with worker_of_its_own(time_skipping_env, [ContinuesTwice]) as queue:
        handle = await client.start_workflow(
            ContinuesTwice.run, 0, id=f"seq-{queue}", task_queue=queue
        )
        seen: list[tuple[str, int, int]] = []
        async with asyncio.timeout(30):
            while len({run for run, _, _ in seen}) < 3 or seen[-1][1] < 5:
                description = await describe(client, handle.id, RPC_TIMEOUT)
                sequence = await sequences.of(handle.id, description)
                seen.append((description.run_id, description.history_length, sequence))
                await asyncio.sleep(0.02)
    sequence_numbers = [sequence for _, _, sequence in seen]
    assert sequence_numbers == sorted(sequence_numbers), seen
    first_run_length = max(length for run, length, _ in seen if run == seen[0][0])
    assert sequence_numbers[-1] > first_run_length
    latest = await describe(client, handle.id, RPC_TIMEOUT)
    # The third run numbers its own events from 1 (its history is shorter than the number):
    # the sequence carries the two runs before it.
    assert latest.history_length < await sequences.of(handle.id, latest)
    again = Sequences(client, RPC_TIMEOUT)  # another replica, or after a restart
    assert await again.of(handle.id, latest) == await sequences.of(handle.id, latest)
    await handle.terminate()


async def test_a_follower_starts_from_the_newer_of_its_own_read_and_the_watchers(
    asgi_mcp: McpClient, asgi_stack: AsgiStack
) -> None:
    task_id = await asgi_mcp.create_task("tests_wait_forever")
    read = await asgi_stack.store.get(task_id)
    assert read is not None
    watchers = asgi_stack.app.state.endpoint.services.listening.watchers
    wake = asyncio.Event()
    first = watchers.follow(replace(read, sequence=5, status_message="at 5"), wake)
    older = watchers.follow(replace(read, sequence=3, status_message="at 3"), wake)
    newer = watchers.follow(replace(read, sequence=9, status_message="at 9"), wake)
    last = watchers.follow(read, wake)
    try:
        taken = [f.take() for f in (first, older, newer, last)]
        messages = [snapshot.status_message if snapshot else None for snapshot in taken]
        assert messages == ["at 5", "at 5", "at 9", "at 9"]
    finally:
        for follower in (first, older, newer, last):
            follower.leave()
