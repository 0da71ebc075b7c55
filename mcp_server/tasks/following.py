"""Following tasks as an async iterator: how every stream and call that follows tasks reads the
replica's watchers (watchers.py), instead of waiting on them by hand.

`async with watchers.following(snapshots, within_s=...) as updates: async for news in updates:`

Rules implemented:
- The first round comes at once: `changed` holds the state each task is followed from (the newer
  of the caller's read and the watcher's). Each later round comes when something happened: a
  newer state of a followed task, a task whose watch ended, or a `nudge()` (something the
  consumer follows besides the tasks: a refused answer, a tool-list change).
- Per task, never an older state after a newer one: a state whose sequence (sequence.py) is
  below one this follow delivered is not delivered, also when the task is followed again.
- Bounded: each task holds only its newest state not yet delivered; a consumer that falls
  behind skips states, nothing queues up, however long it takes.
- A task whose delivered state is terminal is no longer followed; nor is one whose watch ended
  without one (`ended`: "gone", deleted or past its TTL; "failed", Temporal failed a read).
- `within_s`: the iteration ends that long after it began; what was pending when the time came
  is still delivered. `stop`: it ends as soon as that event is set (a server shutting down).
  `tick_s`: a round comes at least that often, empty when nothing happened. `quiet_s`: a round
  is `quiet` once the consumer said nothing for that long (`spoke()`, or the last quiet round):
  it sends a keep-alive.
- Leaving the block (the end, an error, a client gone, a cancellation) releases every watch.
- Time is an injected `Timer` (MonotonicTimer in production): a test moves it instead of
  waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, KeysView
from dataclasses import dataclass, field
from typing import Literal, Protocol

from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES

End = Literal["gone", "failed"]


class Timer(Protocol):
    """Monotonic time and the waits measured in it."""

    def now(self) -> float: ...

    async def wait(self, event: asyncio.Event, at_most_s: float | None) -> None:
        """Return once `event` is set, or `at_most_s` seconds later (None: no limit)."""
        ...


class MonotonicTimer:
    def now(self) -> float:
        return time.monotonic()

    async def wait(self, event: asyncio.Event, at_most_s: float | None) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), at_most_s)


class Feed(Protocol):
    """One task's view of its watcher (watchers.Follower)."""

    @property
    def ended(self) -> End | None: ...

    @property
    def done(self) -> bool: ...

    def take(self) -> TaskSnapshot | None: ...

    def leave(self) -> None: ...


Follow = Callable[[TaskSnapshot, asyncio.Event], Feed]


@dataclass(frozen=True)
class Round:
    """What happened since the last round."""

    changed: dict[str, TaskSnapshot] = field(default_factory=dict)  # newer states, by taskId
    ended: dict[str, End] = field(default_factory=dict)  # watches that ended without an end
    quiet: bool = False  # nothing was said for `quiet_s`: time for a keep-alive


class Updates:
    """The rounds of one follow (the rules are the module's)."""

    def __init__(
        self,
        follow: Follow,
        timer: Timer,
        snapshots: Iterable[TaskSnapshot],
        *,
        within_s: float | None = None,
        tick_s: float | None = None,
        quiet_s: float | None = None,
        stop: asyncio.Event | None = None,
    ) -> None:
        self._follow = follow
        self._timer = timer
        self._starts = list(snapshots)
        self._within_s, self._tick_s, self._quiet_s = within_s, tick_s, quiet_s
        self._stop = stop
        self._wake = asyncio.Event()
        self._feeds: dict[str, Feed] = {}
        self._delivered: dict[str, TaskSnapshot] = {}  # the newest state given, by taskId
        self._first: dict[str, TaskSnapshot] | None = None
        self._ends: float | None = None
        self._last_round = self._spoke = 0.0
        self._stopper: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Updates:
        now = self._timer.now()
        self._ends = None if self._within_s is None else now + self._within_s
        self._last_round = self._spoke = now
        if self._stop is not None:
            self._stopper = asyncio.create_task(self._wake_on(self._stop))
        self._first = {}
        try:
            for snapshot in self._starts:
                self._first[snapshot.task_id] = self.add(snapshot)
        except BaseException:
            self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    @property
    def tasks(self) -> KeysView[str]:
        """The tasks followed now."""
        return self._feeds.keys()

    @property
    def latest(self) -> dict[str, TaskSnapshot]:
        """The newest state delivered of each task followed now."""
        return {task_id: self._delivered[task_id] for task_id in self._feeds}

    def add(self, snapshot: TaskSnapshot) -> TaskSnapshot:
        """Follow one more task (a read the caller may see), and return the state it is followed
        from, as delivered: later states come in rounds. A terminal task is not followed."""
        task_id = snapshot.task_id
        if task_id not in self._feeds:
            feed = self._follow(snapshot, self._wake)
            self._feeds[task_id] = feed
            self._deliver(task_id, feed.take() or snapshot)
        newest = self._delivered[task_id]
        if newest.status in TERMINAL_STATUSES:
            self.drop(task_id)
        return newest

    def drop(self, task_id: str) -> None:
        """Stop following `task_id`."""
        feed = self._feeds.pop(task_id, None)
        if feed is not None:
            feed.leave()

    def nudge(self) -> None:
        """Give a round now, whatever the tasks did."""
        self._wake.set()

    def spoke(self) -> None:
        """The consumer sent something: the next quiet round is `quiet_s` from now."""
        self._spoke = self._timer.now()

    def close(self) -> None:
        for task_id in list(self._feeds):
            self.drop(task_id)
        if self._stopper is not None:
            self._stopper.cancel()

    def __aiter__(self) -> Updates:
        return self

    async def __anext__(self) -> Round:
        if self._stopped():
            raise StopAsyncIteration
        if self._first is not None:
            return self._first_round()
        news: Round | None = None
        while news is None:
            news = await self._next_round()
        return news

    async def _next_round(self) -> Round | None:
        """The round after one wait, or None when none is due yet (StopAsyncIteration: the end)."""
        now = await self._wait()
        nudged = self._wake.is_set()
        news = self._collect(now)
        if news.changed or news.ended:
            return news
        if self._past_end(now) or self._stopped():
            raise StopAsyncIteration
        if nudged or news.quiet or self._tick_due(now):
            self._last_round = now
            return news
        return None

    async def _wait(self) -> float:
        """Wait until something happens or is due, unless the end has passed; the time then."""
        now = self._timer.now()
        if not self._past_end(now) and not self._wake.is_set():
            await self._timer.wait(self._wake, self._timeout(now))
            now = self._timer.now()
        return now

    def _first_round(self) -> Round:
        first, self._first = self._first or {}, None
        news = self._collect(self._timer.now())
        return Round({**first, **news.changed}, news.ended, news.quiet)

    def _collect(self, now: float) -> Round:
        self._wake.clear()  # what set it is taken below
        changed: dict[str, TaskSnapshot] = {}
        ended: dict[str, End] = {}
        for task_id, feed in list(self._feeds.items()):
            snapshot = self._take(task_id, feed)
            if snapshot is not None:
                changed[task_id] = snapshot
            if task_id in self._feeds and feed.done:  # its watch ended without a terminal state
                ended[task_id] = feed.ended or "gone"
                self.drop(task_id)
        quiet = self._quiet_s is not None and now - self._spoke >= self._quiet_s
        if quiet:
            self._spoke = now
        if changed or ended:
            self._last_round = now
        return Round(changed, ended, quiet)

    def _take(self, task_id: str, feed: Feed) -> TaskSnapshot | None:
        """The task's newer state, if any; a terminal one ends its follow."""
        snapshot = feed.take()
        if snapshot is None or not self._deliver(task_id, snapshot):
            return None
        if snapshot.status in TERMINAL_STATUSES:
            self.drop(task_id)
        return snapshot

    def _deliver(self, task_id: str, snapshot: TaskSnapshot) -> bool:
        before = self._delivered.get(task_id)
        if before is not None and snapshot.sequence < before.sequence:
            return False  # older than one delivered: never after it
        self._delivered[task_id] = snapshot
        return True

    def _stopped(self) -> bool:
        return self._stop is not None and self._stop.is_set()

    def _past_end(self, now: float) -> bool:
        return self._ends is not None and now >= self._ends

    def _tick_due(self, now: float) -> bool:
        return self._tick_s is not None and now - self._last_round >= self._tick_s

    def _timeout(self, now: float) -> float | None:
        due = [
            at
            for at in (
                self._ends,
                None if self._tick_s is None else self._last_round + self._tick_s,
                None if self._quiet_s is None else self._spoke + self._quiet_s,
            )
            if at is not None
        ]
        return max(0.0, min(due) - now) if due else None

    async def _wake_on(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self._wake.set()
