"""The rules of followed.py without Temporal: which reads are kept and when the copy stops
being answered. The history long-poll is a queue the test feeds; the clock is the test's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from mcp_server.tasks.followed import (
    FOLLOW_GAP_S,
    IDLE_S,
    STALE_S,
    STARTED_LENGTH,
    VOUCHED_S,
    FollowedTasks,
    Stillness,
)
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.store import new_task_id

Answer = tuple[int, bytes | None] | None


class History:
    """The long-poll of each task: answers the test puts, in order; who asked, and for which
    run and cursor."""

    def __init__(self) -> None:
        self.answers: dict[str, asyncio.Queue[Answer]] = {}
        self.asked: list[tuple[str, str, bytes]] = []

    def queue(self, task_id: str) -> asyncio.Queue[Answer]:
        return self.answers.setdefault(task_id, asyncio.Queue())

    async def __call__(self, task_id: str, run_id: str, cursor: bytes) -> Answer:
        self.asked.append((task_id, run_id, cursor))
        return await self.queue(task_id).get()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Grace:
    """The wait after a run closed (STALE_S): over when the test says so."""

    def __init__(self) -> None:
        self.over = asyncio.Event()
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await self.over.wait()


GRACE = Grace()


@pytest.fixture
async def setup() -> AsyncIterator[tuple[FollowedTasks, History, Clock]]:
    history, clock = History(), Clock()
    GRACE.over.clear()
    followed = FollowedTasks(history, max_tasks=3, max_bytes=1_000_000, clock=clock, sleep=GRACE)
    yield followed, history, clock
    await followed.close()


def a_snapshot(task_id: str, sequence: int = 6, owner: str = "owner-a") -> TaskSnapshot:
    return TaskSnapshot(
        task_id=task_id,
        tool="deploy",
        owner=owner,
        status="input_required",
        status_message="Waiting",
        created_at="2026-01-01T00:00:00Z",
        last_updated_at="2026-01-01T00:00:00Z",
        ttl_ms=None,
        poll_interval_ms=5000,
        input_requests={"q": {}},
        sequence=sequence,
    )


def read(
    followed: FollowedTasks,
    snapshot: TaskSnapshot,
    run: str = "run-1",
    stillness: Stillness = "quiet",
    mark: int | None = None,
) -> TaskSnapshot:
    """A read of Temporal as the store makes it: marked, then kept."""
    return followed.keep(
        snapshot, run, snapshot.sequence, 700, stillness, followed.mark() if mark is None else mark
    )


async def settled() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_task_is_followed_from_its_second_read_within_the_gap(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, history, clock = setup
    task_id = new_task_id()
    assert read(followed, a_snapshot(task_id)) == a_snapshot(task_id)
    assert followed.answer(task_id) is None and len(followed) == 0
    clock.now += FOLLOW_GAP_S - 1
    read(followed, a_snapshot(task_id))
    kept = followed.answer(task_id)
    assert kept is not None and kept.cached and kept == a_snapshot(task_id)
    await settled()
    assert history.asked == [(task_id, "run-1", b"")]  # one long-poll, of the run read


async def test_a_task_read_less_often_than_the_gap_is_not_followed(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, _, clock = setup
    task_id = new_task_id()
    for _ in range(3):
        read(followed, a_snapshot(task_id))
        clock.now += FOLLOW_GAP_S + 1
    assert len(followed) == 0 and followed.answer(task_id) is None


async def test_a_read_with_a_pending_activity_is_not_answered_again(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, _, _ = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id))
    read(followed, a_snapshot(task_id))
    read(followed, a_snapshot(task_id, 9), stillness="busy")  # its progress has no events
    assert followed.answer(task_id) is None


async def test_a_read_awaiting_a_worker_is_answered_until_the_next_empty_long_poll(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    """A signal no worker has processed yet (a backlog of workflow tasks): the read, with the
    answers it found in the history's tail, is answered again; an empty long-poll (Temporal's
    20 s) makes the next read go to Temporal, where a failing workflow task's attempts show."""
    followed, history, _ = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id, 9), stillness="awaiting_worker")
    read(followed, a_snapshot(task_id, 9), stillness="awaiting_worker")
    assert followed.answer(task_id) == a_snapshot(task_id, 9)
    await history.queue(task_id).put((9, b"c1"))  # the first long-poll: the history so far
    await settled()
    assert followed.answer(task_id) == a_snapshot(task_id, 9)
    await history.queue(task_id).put((0, b"c1"))  # 20 s later, nothing new
    await settled()
    assert followed.answer(task_id) is None
    read(followed, a_snapshot(task_id, 9))  # read again: now quiet
    await history.queue(task_id).put((0, b"c1"))
    await settled()
    assert followed.answer(task_id) == a_snapshot(task_id, 9)  # a quiet read outlives it


async def test_a_read_awaiting_a_worker_is_stale_once_the_worker_adds_events(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, history, _ = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id, 9), stillness="awaiting_worker")
    read(followed, a_snapshot(task_id, 9), stillness="awaiting_worker")
    await history.queue(task_id).put((9, b"c1"))
    await settled()
    await history.queue(task_id).put((12, b"c2"))  # the workflow task completed
    await settled()
    assert followed.answer(task_id) is None


async def test_a_change_during_a_read_keeps_it_from_being_answered_again(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, _, _ = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id))
    mark = followed.mark()
    followed.changed(task_id)  # e.g. tasks/update returned while the read was on its way
    read(followed, a_snapshot(task_id), mark=mark)
    assert followed.answer(task_id) is None
    read(followed, a_snapshot(task_id, 8))
    assert followed.answer(task_id) == a_snapshot(task_id, 8)


async def test_an_overtaken_read_is_answered_with_the_newer_copy(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, _, _ = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id, 10))
    read(followed, a_snapshot(task_id, 10))
    older = read(followed, a_snapshot(task_id, 7))
    assert older.sequence == 10


async def test_an_event_past_the_read_marks_the_copy_stale_and_an_older_one_does_not(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, history, _ = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id, 6))
    read(followed, a_snapshot(task_id, 6))
    await history.queue(task_id).put((6, b"after-6"))  # the events the read already saw
    await settled()
    assert followed.answer(task_id) is not None
    await history.queue(task_id).put((7, b"after-7"))
    await settled()
    assert followed.answer(task_id) is None
    assert [cursor for _, _, cursor in history.asked] == [b"", b"after-6", b"after-7"]


async def test_a_closed_run_a_deleted_task_and_a_failed_long_poll_let_the_task_go(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, history, _ = setup
    closed, deleted = new_task_id(), new_task_id()
    for task_id in (closed, deleted):
        read(followed, a_snapshot(task_id))
        read(followed, a_snapshot(task_id))
    assert len(followed) == 2
    await history.queue(closed).put((9, None))
    await history.queue(deleted).put(None)
    await settled()
    assert len(followed) == 1  # the closed one's copy stands in for its read for STALE_S
    assert followed.answer(closed) is None and followed.stale_copy(closed) == a_snapshot(closed)
    assert GRACE.waits[-1] == STALE_S
    GRACE.over.set()
    await settled()
    assert len(followed) == 0
    assert followed.answer(closed) is None and followed.answer(deleted) is None


async def test_a_task_nobody_reads_is_let_go_when_its_long_poll_answers(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, history, clock = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id))
    read(followed, a_snapshot(task_id))
    clock.now += IDLE_S + 1
    await history.queue(task_id).put((0, b"same"))  # Temporal's "nothing new"
    await settled()
    assert len(followed) == 0


async def test_a_long_poll_unanswered_for_too_long_no_longer_vouches_for_the_copy(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, _, clock = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id))
    read(followed, a_snapshot(task_id))
    await settled()
    clock.now += VOUCHED_S + 1
    assert followed.answer(task_id) is None


async def test_beyond_the_cap_the_task_read_least_recently_is_let_go(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, _, _ = setup
    tasks = [new_task_id() for _ in range(5)]
    for task_id in tasks:
        read(followed, a_snapshot(task_id))
        read(followed, a_snapshot(task_id))
        followed.answer(tasks[0])  # the first stays the most recently read
    assert len(followed) == 3
    assert [followed.answer(t) is not None for t in tasks] == [True, False, False, True, True]


async def test_beyond_the_memory_cap_the_task_read_least_recently_is_let_go() -> None:
    followed = FollowedTasks(History(), max_tasks=100, max_bytes=3 * 3000, clock=Clock())
    try:
        tasks = [new_task_id() for _ in range(5)]
        for task_id in tasks:
            followed.keep(a_snapshot(task_id), "r", 6, 900, "quiet", followed.mark())
            followed.keep(a_snapshot(task_id), "r", 6, 900, "quiet", followed.mark())
        assert len(followed) == 3 and followed.bytes <= 3 * 3000
        assert followed.answer(tasks[0]) is None and followed.answer(tasks[4]) is not None
    finally:
        await followed.close()


async def test_a_new_run_replaces_the_one_followed(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, history, _ = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id, 6), run="run-1")
    read(followed, a_snapshot(task_id, 6), run="run-1")
    newer = replace(a_snapshot(task_id, 12), status_message="Continued")
    read(followed, newer, run="run-2")
    kept = followed.answer(task_id)
    assert kept is not None and kept.status_message == "Continued"
    await settled()
    assert history.asked[-1][1] == "run-2" and len(followed) == 1


async def test_off_follows_nothing() -> None:
    followed = FollowedTasks(History(), max_tasks=0, max_bytes=1, clock=Clock())
    task_id = new_task_id()
    for _ in range(3):
        followed.keep(a_snapshot(task_id), "r", 6, 10, "quiet", followed.mark())
    assert len(followed) == 0 and followed.answer(task_id) is None


async def test_a_change_the_long_poll_saw_leaves_the_copy_answerable_while_it_is_read_again(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    """Stale while revalidating: a change made elsewhere (the long-poll saw events) leaves the
    copy for reads to fall back on, for STALE_S after it was read; a change of this replica's
    own (an answer, a cancel) does not: its next read waits for Temporal."""
    followed, history, clock = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id))
    read(followed, a_snapshot(task_id))
    clock.now += STALE_S * 2  # the copy is old, and was current until the change below
    await history.queue(task_id).put((6, b"c1"))
    await settled()
    await history.queue(task_id).put((8, b"c2"))  # two events came: someone answered
    await settled()
    assert followed.answer(task_id) is None
    assert followed.stale_copy(task_id) == a_snapshot(task_id)
    clock.now += STALE_S + 1
    assert followed.stale_copy(task_id) is None  # too old to stand in for the read
    read(followed, a_snapshot(task_id, 8))
    assert followed.answer(task_id) == a_snapshot(task_id, 8)
    followed.changed(task_id)  # this replica's own tasks/update
    assert followed.answer(task_id) is None and followed.stale_copy(task_id) is None
    await history.queue(task_id).put((9, b"c3"))
    await settled()
    assert followed.stale_copy(task_id) is None  # still its own change, not yet read
    read(followed, a_snapshot(task_id, 9))  # the read after it: kept, and answered again
    assert followed.answer(task_id) == a_snapshot(task_id, 9)
    await history.queue(task_id).put((10, b"c4"))  # a change made elsewhere again
    await settled()
    assert followed.stale_copy(task_id) == a_snapshot(task_id, 9)


async def test_the_reads_of_a_stale_copy_share_one_read_of_temporal(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    followed, _, _ = setup
    task_id = new_task_id()
    calls: list[str] = []
    gate = asyncio.Event()

    async def read_temporal() -> TaskSnapshot | None:
        calls.append(task_id)
        await gate.wait()
        return a_snapshot(task_id, 9)

    first = followed.refreshing(task_id, read_temporal)
    second = followed.refreshing(task_id, read_temporal)
    assert first is second
    gate.set()
    assert await first == a_snapshot(task_id, 9)
    await settled()
    third = followed.refreshing(task_id, read_temporal)  # done: the next change reads again
    assert third is not first and await third == a_snapshot(task_id, 9)
    assert calls == [task_id, task_id]


async def test_a_task_this_replica_started_is_followed_from_its_start(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    """Its first polls are answered from the state it was started with, until the worker's
    first workflow task adds events; a task nobody polls is let go as any other."""
    followed, history, clock = setup
    task_id = new_task_id()
    started = replace(a_snapshot(task_id), status="working", input_requests={})
    followed.seed(started, "run-1", 300, followed.mark())
    assert followed.answer(task_id) == replace(started, sequence=STARTED_LENGTH)
    await settled()
    assert history.asked == [(task_id, "run-1", b"")]
    await history.queue(task_id).put((STARTED_LENGTH, b"c1"))  # the history so far
    await settled()
    assert followed.answer(task_id) is not None
    await history.queue(task_id).put((STARTED_LENGTH + 3, b"c2"))  # the first workflow task ran
    await settled()
    assert followed.answer(task_id) is None
    assert followed.stale_copy(task_id) == replace(started, sequence=STARTED_LENGTH)
    clock.now += IDLE_S + 1  # nobody polls it: let go at the next answer of its long-poll
    await history.queue(task_id).put((0, b"c2"))
    await settled()
    assert len(followed) == 0


async def test_an_answer_of_this_replica_is_taken_by_a_copy_that_was_current(
    setup: tuple[FollowedTasks, History, Clock],
) -> None:
    """tasks/update here: the copy shows the answer as a read of Temporal would (the question
    gone, the task working), one event later, while that read is on its way; a copy that was
    not current (a change is being read) is read through instead."""
    followed, history, _ = setup
    task_id = new_task_id()
    read(followed, a_snapshot(task_id))
    read(followed, a_snapshot(task_id))
    followed.answered(task_id, ["q"])
    assert followed.answer(task_id) is None
    taken = followed.stale_copy(task_id)
    assert taken is not None and taken.input_requests == {} and taken.status == "working"
    assert taken.sequence == a_snapshot(task_id).sequence + 1
    read(followed, a_snapshot(task_id))  # an older read (a smaller sequence): the copy stands
    assert followed.stale_copy(task_id) == taken
    await history.queue(task_id).put((6, b"c1"))
    await history.queue(task_id).put((8, b"c2"))  # the answer's events: read again
    await settled()
    followed.answered(task_id, ["q"])  # not current now: read through
    assert followed.stale_copy(task_id) is None
