"""The crash matrix: kill -9 of the server, the worker or Temporal (each a process of its own,
tests/crash_topology.py) while four deploys sit at four moments, then a restart of what was
killed on the same ports and data. Every task must reach its right end, no acknowledged answer
may be lost, and no completed step may run twice.

The moments, one deploy each, all in flight at the instant of the kill:
- "mid-step": its step "slow" runs (a `sleep` between a start and an end marker);
- "parked": it waits at the approval gate (input_required), answered after the restart;
- "acked": its approval was answered, and tasks/update acknowledged, just before the kill; its
  release step, which the answer starts, holds between its markers until the killed part is
  back (a gate file), so the kill never falls between a finished step and Temporal's record of
  it, where any activity (at least once) runs again;
- "rollback": it was cancelled and runs the rollback of "slow" (a `sleep` again).

Every step and every rollback appends `NAME-start` and `NAME-end` to the deploy's marker file.
A step with an end marker must have exactly one; only the step or rollback running at the kill
may have started twice (its first run died with the worker).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client

from tests.crash_topology import PARTS, Part, Topology, running
from tests.mcp_client import McpClient

pytestmark = pytest.mark.slow

SLOW_S = 5  # long enough that "mid-step" is still in its step when the kill comes
PIPELINE = """
[[steps]]
name = "prepare"
run = "echo prepare-start >> MARKER; echo prepare-end >> MARKER"
rollback = "echo undo-prepare-start >> MARKER; echo undo-prepare-end >> MARKER"

[[steps]]
name = "slow"
run = "echo slow-start >> MARKER; sleep SLOW; echo slow-end >> MARKER"
rollback = "echo undo-slow-start >> MARKER; sleep SLOW; echo undo-slow-end >> MARKER"

[[steps]]
name = "release"
approval = "Release?"
run = "echo release-start >> MARKER; GATED echo release-end >> MARKER"
rollback = "echo undo-release-start >> MARKER; echo undo-release-end >> MARKER"
"""
MOMENTS = ("mid-step", "parked", "acked", "rollback")
ACKED_GATE = "acked.go"  # created in the pipelines folder (the steps' working directory)
APPROVE = {"action": "accept", "content": {"approve": True}}
# What each deploy must have run once the matrix is over: marker -> allowed counts.
ONCE = {1}
# How often the step running at the kill starts: a killed worker took its run along, so the
# retry starts it again; a killed server changes nothing; a killed Temporal may or may not
# outlast the heartbeat timeout before it is back.
INTERRUPTED_STARTS: dict[Part, set[int]] = {"server": {1}, "worker": {2}, "temporal": {1, 2}}
RAN = {"prepare-start": ONCE, "prepare-end": ONCE, "slow-start": ONCE, "slow-end": ONCE}
RELEASED = {**RAN, "release-start": ONCE, "release-end": ONCE}


def expected(moment: str, victim: Part) -> dict[str, set[int]]:
    """marker -> the counts allowed once the deploy at `moment` has ended."""
    interrupted = INTERRUPTED_STARTS[victim]
    return {
        "mid-step": {**RELEASED, "slow-start": interrupted},
        "parked": RELEASED,
        # The gated release step may have started before the kill (then it starts again).
        "acked": {**RELEASED, "release-start": ONCE | interrupted},
        "rollback": {
            **RAN,
            "undo-slow-start": interrupted,
            "undo-slow-end": ONCE,
            "undo-prepare-start": ONCE,
            "undo-prepare-end": ONCE,
        },
    }[moment]


def markers(topology: Topology, moment: str) -> Counter[str]:
    path = topology.pipelines_dir / f"{moment}.marker"
    return Counter(path.read_text().split() if path.exists() else [])


def write_pipelines(topology: Topology) -> None:
    gate = f"while [ ! -e {ACKED_GATE} ]; do sleep 0.1; done;"
    for moment in MOMENTS:
        text = PIPELINE.replace("MARKER", f"{moment}.marker").replace("SLOW", str(SLOW_S))
        text = text.replace("GATED", gate if moment == "acked" else "")
        (topology.pipelines_dir / f"{moment}.toml").write_text(text)


async def wait_marker(topology: Topology, moment: str, marker: str, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while not markers(topology, moment)[marker]:
        assert time.monotonic() < deadline, f"{moment}: no {marker} within {within} s"
        await asyncio.sleep(0.05)


async def approve(mcp: McpClient, task_id: str, within: float = 60) -> None:
    """Answer the task's approval once it asks (the task may still be recovering)."""
    waiting = await mcp.wait_status(task_id, "input_required", within=within)
    ((key, _),) = waiting["inputRequests"].items()
    reply = await mcp.update_task(task_id, {key: APPROVE})
    assert reply.status == 200 and "result" in reply.body, reply.body


async def bring_to_moments(topology: Topology, mcp: McpClient) -> dict[str, str]:
    """Start the four deploys and bring each to its moment; return their taskIds."""
    tasks = {m: await mcp.create_task("deploy", {"pipeline": m}) for m in MOMENTS[1:]}
    for moment in MOMENTS[1:]:
        await mcp.wait_status(tasks[moment], "input_required", within=60)
    tasks["mid-step"] = await mcp.create_task("deploy", {"pipeline": "mid-step"})
    await wait_marker(topology, "mid-step", "slow-start")
    cancelled = await mcp.cancel_task(tasks["rollback"])
    assert "result" in cancelled.body, cancelled.body
    await wait_marker(topology, "rollback", "undo-slow-start")
    await approve(mcp, tasks["acked"])
    return tasks


@pytest.mark.parametrize("victim", PARTS)
async def test_kill_9_at_each_moment_loses_no_answer_and_reruns_no_completed_step(
    victim: Part, tmp_path: Path
) -> None:
    async with running(tmp_path) as (topology, mcp):
        write_pipelines(topology)
        tasks = await bring_to_moments(topology, mcp)
        # Every deploy is still at its moment when the kill comes.
        assert not markers(topology, "mid-step")["slow-end"]
        assert not markers(topology, "rollback")["undo-slow-end"]
        topology.kill(victim)
        await topology.start_part(victim)
        (topology.pipelines_dir / ACKED_GATE).touch()

        await approve(mcp, tasks["parked"])
        await approve(mcp, tasks["mid-step"])
        ends: dict[str, dict[str, Any]] = {}
        for moment, task_id in tasks.items():
            ends[moment] = await mcp.wait_terminal(task_id, within=90)
        for moment in ("mid-step", "parked", "acked"):
            end = ends[moment]
            assert end["status"] == "completed", (moment, end)
            assert end["result"]["isError"] is False, (moment, end)
            steps = end["result"]["structuredContent"]["steps"]
            assert [s["status"] for s in steps] == ["succeeded"] * 3, (moment, steps)
        assert ends["rollback"]["status"] == "cancelled", ends["rollback"]
        for moment in MOMENTS:
            counts, allowed = markers(topology, moment), expected(moment, victim)
            wrong = {m for m in {*counts, *allowed} if counts[m] not in allowed.get(m, {0})}
            assert not wrong, (victim, moment, sorted(wrong), dict(counts))


IN_FLIGHT = 200
# One step, longer than it takes to start 200 tasks on a slow host: all are in flight at the
# kill. It resumes from its last heartbeat after the restart.
JOB = {"steps": 1, "step_seconds": 30}


@pytest.mark.timeout(180)  # 25-55 s measured alone: too close to the default 90 s under load
async def test_200_tasks_in_flight_all_complete_after_kill_9_of_the_worker(tmp_path: Path) -> None:
    # No open-task quota: under this burst its reservations (updates of one workflow per
    # principal) can wait past their 10 s on a loaded host, and a tools/call retried after
    # that 503 could start a second task (no idempotency key yet).
    settings = {"max_concurrent_activities": str(IN_FLIGHT), "max_open_tasks_per_principal": "0"}
    async with running(tmp_path, **settings) as (topology, mcp):
        limit = asyncio.Semaphore(16)

        async def start(index: int) -> str:
            async with limit:
                return await mcp.create_task("multi_step_job", {"name": f"job-{index}", **JOB})

        async def status(task_id: str) -> dict[str, Any]:
            async with limit:
                return (await mcp.get_task(task_id)).result

        tasks = await asyncio.gather(*(start(index) for index in range(IN_FLIGHT)))
        assert len(set(tasks)) == IN_FLIGHT
        topology.kill("worker")
        # With no worker nothing can end: every task open now was in flight at the kill.
        at_kill = Counter([task["status"] for task in await asyncio.gather(*map(status, tasks))])
        assert at_kill == {"working": IN_FLIGHT}, at_kill
        await topology.start_part("worker")

        ended: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + 240
        while len(ended) < IN_FLIGHT:
            assert time.monotonic() < deadline, f"{IN_FLIGHT - len(ended)} tasks still open"
            await asyncio.sleep(2)
            pending = [task_id for task_id in tasks if task_id not in ended]
            for task in await asyncio.gather(*map(status, pending)):
                if task["status"] != "working":
                    ended[task["taskId"]] = task
        failed = {
            t["taskId"]: t.get("statusMessage")
            for t in ended.values()
            if t["status"] != "completed"
        }
        assert not failed, f"{len(failed)} of {IN_FLIGHT} did not complete: {failed}"
        results = [task["result"] for task in ended.values()]
        assert all(result["isError"] is False for result in results)
        names = sorted(result["structuredContent"]["name"] for result in results)
        assert names == sorted(f"job-{index}" for index in range(IN_FLIGHT))


async def wait_started(client: Client, task_id: str, attempt: int, within: float = 60) -> None:
    """Until the task's activity runs its `attempt` on a worker."""
    deadline = time.monotonic() + within
    while True:
        description = await client.get_workflow_handle(task_id).describe()
        pending = description.raw_description.pending_activities
        if pending and pending[0].attempt == attempt:
            if pending[0].state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED:
                return
        assert time.monotonic() < deadline, f"attempt {attempt} did not start: {pending}"
        await asyncio.sleep(0.1)


CRASHES = 5


@pytest.mark.timeout(180)  # 25-55 s measured alone: too close to the default 90 s under load
async def test_a_step_outlives_a_worker_that_crashes_again_and_again(tmp_path: Path) -> None:
    """A worker in a crash loop (kill -9 as each attempt of a step starts) used to fail the task
    for good after 5 attempts; a step that resumes from its heartbeat is retried until done."""
    async with running(tmp_path) as (topology, mcp):
        client = await Client.connect(topology.temporal.address)
        job = {"name": "crash-loop", "steps": 1, "step_seconds": 2}
        task_id = await mcp.create_task("multi_step_job", job)
        for attempt in range(1, CRASHES + 1):
            await wait_started(client, task_id, attempt)
            topology.kill("worker")
            await topology.start_part("worker")
        done = await mcp.wait_terminal(task_id, within=120)
        assert done["status"] == "completed", done
        assert done["result"]["structuredContent"]["steps"][0]["attempt"] == CRASHES + 1


async def test_a_step_whose_worker_process_alone_is_killed_is_not_finished_twice(
    tmp_path: Path,
) -> None:
    """kill -9 of the worker's own pid (as the OOM killer does), not of what it started: the
    step's shell used to live on and finish "slow" while the retry ran it again."""
    async with running(tmp_path) as (topology, mcp):
        write_pipelines(topology)
        task_id = await mcp.create_task("deploy", {"pipeline": "mid-step"})
        await wait_marker(topology, "mid-step", "slow-start")
        worker = topology.worker.process
        assert worker is not None
        worker.kill()
        worker.wait()
        topology.worker.process = None
        await topology.start_part("worker")
        await approve(mcp, task_id)
        end = await mcp.wait_terminal(task_id, within=90)
        assert end["status"] == "completed" and end["result"]["isError"] is False, end
        counts = markers(topology, "mid-step")
        assert counts["slow-start"] == 2 and counts["slow-end"] == 1, dict(counts)
