"""`make bench`'s question phase: the round trip of one question asked by a team's workflow
(the interactive contract, examples/exposed-python's way), answered with tasks/update, seen by
the workflow; beside the same round trip in raw Temporal signals, in the same run.

- ours: `bench_team_question` (bench/question_tools.toml), whose workflow runs on a worker in
  this process (task queue bench-team) and asks one approval with the helper: its `mcp.ask`
  signal to the task workflow, which parks at input_required; the client polls tasks/get every
  `poll_s` until it sees the question, then answers with tasks/update; the task relays the
  answer (`mcp.answer`) to the team's workflow.
- raw: `BenchRawQuestion` on the same worker upserts a memo saying it asks and waits for a
  signal; the client polls `describe()` every `poll_s` until the memo says so, then signals.

Both are timed on Temporal's clock, in the team workflow's own history: from the event of its
question (ours: the `mcp.ask` signal initiated; raw: the memo upserted) to the start of the
workflow task that sees the answer (the first one started after the answer's signal).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.worker import Worker

from bench.floor_clients import Clients, Progress
from bench.load_clients import LoadClient
from bench.run import percentiles
from bench.team_workflows import RAW_ANSWER_SIGNAL, RawQuestion, TeamQuestion

TOOL = "bench_team_question"
TEAM_QUEUE = "bench-team"
TEAM_TYPE = "BenchTeamQuestion"
YES = {"approve": {"action": "accept", "content": {"approve": True}}}


async def round_trips(
    clients: Clients, temporal: Client, rounds: int, poll_s: float, progress: Progress
) -> dict[str, Any]:
    """`rounds` questions through each side, interleaved; p50/p99 of each."""
    (owner,) = clients.take(1)
    samples: dict[str, list[float]] = {"server": [], "raw": []}
    progress.set("question round trips, both sides", 2 * rounds)
    async with Worker(temporal, task_queue=TEAM_QUEUE, workflows=[TeamQuestion, RawQuestion]):
        for _ in range(rounds):
            samples["server"].append(await _ours(clients, owner, temporal, poll_s))
            progress.done += 1
            samples["raw"].append(await _raw(temporal, poll_s))
            progress.done += 1
    return {"poll_ms": poll_s * 1000, **{side: percentiles(s) for side, s in samples.items()}}


async def _ours(clients: Clients, owner: LoadClient, temporal: Client, poll_s: float) -> float:
    task_id = str((await clients.create(owner, TOOL, {}))["taskId"])
    while True:  # polled, as a client without a listen stream finds a question
        if "approve" in (await clients.get(owner, task_id)).get("inputRequests", {}):
            break
        await asyncio.sleep(poll_s)
    await owner.rpc("tasks/update", {"taskId": task_id, "inputResponses": YES}, task_id)
    child = temporal.get_workflow_handle(f"{task_id}-{TEAM_TYPE}")
    await child.result()
    events = (await child.fetch_history()).events
    asked = _first(
        events,
        lambda e: e.HasField("signal_external_workflow_execution_initiated_event_attributes"),
    )
    return _seen(events, "mcp.answer") - asked


async def _raw(temporal: Client, poll_s: float) -> float:
    handle = await temporal.start_workflow(
        RawQuestion.run, id=f"bench-raw-question-{uuid.uuid4()}", task_queue=TEAM_QUEUE
    )
    while True:
        if await (await handle.describe()).memo_value("asking", False):
            break
        await asyncio.sleep(poll_s)
    await handle.signal(RAW_ANSWER_SIGNAL, {"approve": True})
    await handle.result()
    events = (await handle.fetch_history()).events
    asked = _first(events, lambda e: e.HasField("workflow_properties_modified_event_attributes"))
    return _seen(events, RAW_ANSWER_SIGNAL) - asked


def _time(event: HistoryEvent) -> float:
    moment: datetime = event.event_time.ToDatetime()
    return moment.timestamp()


def _first(events: Any, holds: Callable[[HistoryEvent], bool]) -> float:
    return _time(next(event for event in events if holds(event)))


def _seen(events: Any, signal: str) -> float:
    """When the workflow task that sees `signal` started."""
    signalled = False
    for event in events:
        signaled = event.workflow_execution_signaled_event_attributes
        if event.HasField("workflow_execution_signaled_event_attributes"):
            signalled = signalled or signaled.signal_name == signal
        elif signalled and event.HasField("workflow_task_started_event_attributes"):
            return _time(event)
    raise RuntimeError(f"no workflow task saw the {signal} signal")
