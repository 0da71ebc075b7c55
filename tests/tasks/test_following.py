"""The rules of tasks/following.py: the rounds of a follow, without Temporal. The feeds are the
test's (or the replica's watchers over the in-memory store); the time is a ManualTimer, moved
instead of waited for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from mcp_server.tasks.following import End, Round, Updates
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.store import new_task_id
from mcp_server.tasks.watchers import TaskWatchers
from mcp_tasks.contracts.task_state import TaskInput, iso_timestamp
from mcp_tasks.contracts.tool_messages import ToolResult
from tests.fakes.clock import ManualTimer
from tests.fakes.memory_store import MemoryTaskStore
from tests.fakes.task_runner import Run, Script
from workflows.results import text_result


def a_snapshot(task_id: str = "t1", sequence: int = 1, **fields: Any) -> TaskSnapshot:
    values: dict[str, Any] = {
        "task_id": task_id,
        "tool": "steps-a",
        "owner": "owner-a",
        "status": "working",
        "status_message": f"at {sequence}",
        "created_at": "2026-01-01T00:00:00Z",
        "last_updated_at": "2026-01-01T00:00:00Z",
        "ttl_ms": None,
        "poll_interval_ms": 500,
        "input_requests": {},
        "sequence": sequence,
        **fields,
    }
    return TaskSnapshot(**values)


@dataclass(eq=False)
class Feed:
    """A watcher the test drives: it publishes states and ends when told."""

    wake: asyncio.Event
    pending: TaskSnapshot | None
    ended: End | None = None
    watched: bool = True
    left: bool = False

    def take(self) -> TaskSnapshot | None:
        snapshot, self.pending = self.pending, None
        return snapshot

    @property
    def done(self) -> bool:
        return not self.watched and self.pending is None

    def leave(self) -> None:
        self.left = True

    def publish(self, snapshot: TaskSnapshot) -> None:
        self.pending = snapshot
        self.wake.set()

    def end(self, why: End | None) -> None:
        self.watched, self.ended = False, why
        self.wake.set()


class Feeds:
    def __init__(self) -> None:
        self.of: dict[str, Feed] = {}

    def __call__(self, snapshot: TaskSnapshot, wake: asyncio.Event) -> Feed:
        feed = self.of[snapshot.task_id] = Feed(wake, snapshot)
        return feed


async def next_round(updates: Updates) -> Round:
    async with asyncio.timeout(5):
        return await anext(updates)


async def until_waiting(timer: ManualTimer) -> None:
    """Until the follow waits on the timer (what it does between rounds)."""
    async with asyncio.timeout(5):
        await timer.waited_on()


async def no_round_yet(updates: Updates, timer: ManualTimer) -> asyncio.Task[Round]:
    """The next round, asked for; it has not come (the follow waits on the timer)."""
    pending = asyncio.create_task(anext(updates))
    await until_waiting(timer)
    assert not pending.done()
    return pending


@pytest.fixture
def feeds() -> Feeds:
    return Feeds()


@pytest.fixture
def timer() -> ManualTimer:
    return ManualTimer()


async def test_the_first_round_comes_at_once_with_the_state_each_task_is_followed_from(
    feeds: Feeds, timer: ManualTimer
) -> None:
    one, two = a_snapshot("t1"), a_snapshot("t2", status="completed")
    async with Updates(feeds, timer, [one, two]) as updates:
        first = await next_round(updates)
        assert first.changed == {"t1": one, "t2": two}
        assert list(updates.tasks) == ["t1"]  # a terminal task is not followed
        assert feeds.of["t2"].left


async def test_a_state_older_than_one_delivered_is_never_delivered_after_it(
    feeds: Feeds, timer: ManualTimer
) -> None:
    async with Updates(feeds, timer, [a_snapshot(sequence=5)]) as updates:
        await next_round(updates)
        feeds.of["t1"].publish(a_snapshot(sequence=3))
        assert (await next_round(updates)).changed == {}
        feeds.of["t1"].publish(a_snapshot(sequence=7))
        assert (await next_round(updates)).changed["t1"].sequence == 7
        # ... also when the task is followed again from an older read.
        updates.drop("t1")
        assert updates.add(a_snapshot(sequence=4)).sequence == 7
        assert updates.latest["t1"].sequence == 7


async def test_a_terminal_state_or_an_ended_watch_ends_the_task_follow(
    feeds: Feeds, timer: ManualTimer
) -> None:
    async with Updates(feeds, timer, [a_snapshot("t1"), a_snapshot("t2")]) as updates:
        await next_round(updates)
        feeds.of["t1"].publish(a_snapshot("t1", sequence=2, status="completed"))
        feeds.of["t2"].end("failed")
        news = await next_round(updates)
        assert news.changed["t1"].status == "completed"
        assert news.ended == {"t2": "failed"}
        assert not updates.tasks and feeds.of["t1"].left and feeds.of["t2"].left


async def test_a_nudge_gives_a_round_with_nothing_changed(feeds: Feeds, timer: ManualTimer) -> None:
    async with Updates(feeds, timer, [a_snapshot()]) as updates:
        await next_round(updates)
        pending = await no_round_yet(updates, timer)
        updates.nudge()
        assert await pending == Round()


async def test_the_iteration_ends_at_its_deadline_and_still_delivers_what_was_due(
    feeds: Feeds, timer: ManualTimer
) -> None:
    async with Updates(feeds, timer, [a_snapshot()], within_s=10) as updates:
        await next_round(updates)
        pending = await no_round_yet(updates, timer)
        timer.advance(9.9)
        await asyncio.sleep(0)
        assert not pending.done()
        feeds.of["t1"].publish(a_snapshot(sequence=2))
        timer.advance(0.1)
        assert (await pending).changed["t1"].sequence == 2
        with pytest.raises(StopAsyncIteration):
            await next_round(updates)
    assert feeds.of["t1"].left


async def test_a_tick_gives_an_empty_round_when_nothing_happened(
    feeds: Feeds, timer: ManualTimer
) -> None:
    async with Updates(feeds, timer, [a_snapshot()], tick_s=3) as updates:
        await next_round(updates)
        pending = await no_round_yet(updates, timer)
        timer.advance(2.5)
        await asyncio.sleep(0)
        assert not pending.done()
        timer.advance(0.5)
        assert await pending == Round()


async def test_a_round_is_quiet_once_the_consumer_said_nothing_for_quiet_s(
    feeds: Feeds, timer: ManualTimer
) -> None:
    async with Updates(feeds, timer, [a_snapshot()], quiet_s=15) as updates:
        assert not (await next_round(updates)).quiet
        pending = await no_round_yet(updates, timer)
        timer.advance(10)
        updates.spoke()  # 10 s in: the next keep-alive is due 15 s from here
        timer.advance(10)
        await asyncio.sleep(0)
        assert not pending.done()
        timer.advance(5)
        assert (await pending).quiet
        # The quiet round counts as said: the next one is 15 s later again.
        pending = await no_round_yet(updates, timer)
        timer.advance(14)
        await asyncio.sleep(0)
        assert not pending.done()
        timer.advance(1)
        assert (await pending).quiet


async def test_a_stop_event_ends_the_iteration_at_once(feeds: Feeds, timer: ManualTimer) -> None:
    stop = asyncio.Event()
    async with Updates(feeds, timer, [a_snapshot()], stop=stop) as updates:
        await next_round(updates)
        pending = await no_round_yet(updates, timer)
        stop.set()
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(pending, 5)
    assert feeds.of["t1"].left


async def test_a_consumer_cancelled_while_it_waits_releases_every_watch(
    feeds: Feeds, timer: ManualTimer
) -> None:
    async def consume() -> None:
        async with Updates(feeds, timer, [a_snapshot("t1"), a_snapshot("t2")]) as updates:
            async for _ in updates:
                pass

    consumer = asyncio.create_task(consume())
    await until_waiting(timer)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert feeds.of["t1"].left and feeds.of["t2"].left


# ----- over the replica's watchers and the in-memory store -------------------------------------


class Steps:
    """A task script the test drives: each message put is reported; None completes the task.
    Each workflow name has its own (`steps-a`, `steps-b`)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()

    async def __call__(self, task: TaskInput, run: Run) -> ToolResult:
        while (message := await self.queue.get()) is not None:
            run.report(message)
        return text_result("done")


Replica = tuple[MemoryTaskStore, TaskWatchers, dict[str, Steps]]


@pytest.fixture
async def replica(timer: ManualTimer) -> AsyncIterator[Replica]:
    steps = {"steps-a": Steps(), "steps-b": Steps()}
    scripts: dict[str, Script] = dict(steps)
    store = MemoryTaskStore(scripts=scripts)
    yield store, TaskWatchers(store, lambda: datetime.now(UTC), 1, 100, timer), steps
    await store.close()


async def a_task(store: MemoryTaskStore, workflow: str = "steps-a") -> TaskSnapshot:
    task = TaskInput(
        task_id=new_task_id(),
        tool=workflow,
        arguments={},
        created_at=iso_timestamp(datetime.now(UTC)),
        ttl_ms=None,
        poll_interval_ms=500,
        owner="owner-a",
    )
    return await store.create(task, workflow)


async def until_round(updates: Updates, holds: Callable[[Round], bool]) -> Round:
    async with asyncio.timeout(5):
        async for news in updates:
            if holds(news):
                return news
    raise AssertionError("the follow ended first")


def says(task_id: str, message: str) -> Callable[[Round], bool]:
    def holds(news: Round) -> bool:
        snapshot = news.changed.get(task_id)
        return snapshot is not None and snapshot.status_message == message

    return holds


def ended(task_id: str) -> Callable[[Round], bool]:
    def holds(news: Round) -> bool:
        snapshot = news.changed.get(task_id)
        return snapshot is not None and snapshot.status == "completed"

    return holds


async def test_a_follow_hears_each_change_until_the_end_then_releases_the_watcher(
    replica: Replica,
) -> None:
    store, watchers, steps = replica
    task = await a_task(store)
    script = steps["steps-a"]
    async with watchers.following([task]) as updates:
        assert (await next_round(updates)).changed == {task.task_id: task}
        assert len(watchers) == 1
        script.queue.put_nowait("Step 1")
        await until_round(updates, says(task.task_id, "Step 1"))
        script.queue.put_nowait(None)
        done = await until_round(updates, ended(task.task_id))
        assert done.ended == {} and not updates.tasks
    assert len(watchers) == 0


async def test_a_consumer_that_falls_behind_gets_only_the_newest_state(
    replica: Replica,
) -> None:
    store, watchers, steps = replica
    task = await a_task(store)
    async with watchers.following([task]) as slow, watchers.following([task]) as fast:
        await next_round(slow)
        for n in (1, 2, 3):
            steps["steps-a"].queue.put_nowait(f"Step {n}")
        await until_round(fast, says(task.task_id, "Step 3"))
        assert (await next_round(slow)).changed[task.task_id].status_message == "Step 3"
        assert len(watchers) == 1  # both share the replica's one watcher
    assert len(watchers) == 0


async def test_one_follow_of_two_tasks_gives_the_changes_of_each_as_they_come(
    replica: Replica,
) -> None:
    store, watchers, steps = replica
    first = await a_task(store)
    async with watchers.following([first]) as updates:
        await next_round(updates)
        second = updates.add(await a_task(store, "steps-b"))
        assert set(updates.tasks) == {first.task_id, second.task_id}
        assert updates.latest[second.task_id] == second
        steps["steps-a"].queue.put_nowait("First's step")
        await until_round(updates, says(first.task_id, "First's step"))
        assert updates.latest[second.task_id].status_message != "First's step"
        steps["steps-b"].queue.put_nowait("Second's step")
        await until_round(updates, says(second.task_id, "Second's step"))
        assert updates.latest[first.task_id].status_message == "First's step"
    assert len(watchers) == 0


def test_a_follow_that_is_never_entered_follows_nothing(feeds: Feeds, timer: ManualTimer) -> None:
    Updates(feeds, timer, [a_snapshot("never")])
    assert not feeds.of
