"""One watcher per task in this replica, shared by every listen stream that follows the task.

Rules implemented:
- A watcher follows its task with Temporal's history long-poll (`TaskStore.wait_for_events`):
  one call that returns as soon as the history grows, or empty after Temporal's long-poll
  timeout (20 s). A task that does not change costs no read and one call per 20 s, however
  many streams follow it and however long they stay open.
- It re-reads the task (`TaskStore.get`, the read of `tasks/get`) only after new events, and
  no faster than the poll limiter lets a client poll it: a burst of `burst` reads, then
  `rate_factor` reads per pollIntervalMs. Events that come faster are folded into the next
  read. Starting costs one read (the events before the cursor are not told apart from new
  ones).
- A task that continues as new keeps its taskId (the workflow ID) in a new run: when a run's
  history is complete and the task is not terminal, the watcher follows the newest run.
- Every follower gets the watcher's newest snapshot, never an older one after a newer one; a
  follower that joins with a read newer than the watcher's (a larger sequence number,
  sequence.py) starts with its own read, which the watcher then keeps.
- The watcher stops when its last follower leaves, or once its task is terminal, gone (deleted,
  or past its TTL) or unreadable (Temporal failed): its followers are told and wake up.
- Consumers follow tasks through `TaskWatchers.following` (following.py: an async iterator of
  rounds), never through a follower's wake event.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from mcp_server.tasks.errors import TaskError
from mcp_server.tasks.following import End, MonotonicTimer, Timer, Updates
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.store import TaskStore
from mcp_server.tasks.ttl import is_expired
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES
from mcp_tasks.token_buckets import TokenBucket

log = logging.getLogger("mcp_server.tasks.watchers")

_DEFAULT_POLL_MS = 1000
_MIN_EMPTY_POLL_S = 1.0


@dataclass(eq=False)
class Follower:
    """One stream's view of one task: the newest snapshot it has not taken yet."""

    wake: asyncio.Event
    pending: TaskSnapshot | None = None
    # Why no more snapshots will come ("gone": the task vanished; "failed": Temporal failed).
    ended: End | None = None
    _watcher: _Watcher | None = field(default=None, repr=False)

    def take(self) -> TaskSnapshot | None:
        snapshot, self.pending = self.pending, None
        return snapshot

    @property
    def done(self) -> bool:
        """Nothing more will come: no watcher feeds it and its last snapshot was taken."""
        return self._watcher is None and self.pending is None

    def leave(self) -> None:
        if self._watcher is not None:
            self._watcher.drop(self)
            self._watcher = None


class _Pace:
    """The poll limiter's token bucket, waited on instead of refused."""

    def __init__(self, rate_factor: int, burst: int) -> None:
        self.rate_factor = max(1, rate_factor)
        self.bucket = TokenBucket(burst, time.monotonic())

    async def next_read(self, poll_ms: int | None) -> None:
        rate = self.rate_factor * 1000 / (poll_ms or _DEFAULT_POLL_MS)  # reads per second
        self.bucket.refill(time.monotonic(), rate)
        if not self.bucket.take():
            await asyncio.sleep(self.bucket.seconds_to_next(rate))
            self.bucket.refill(time.monotonic(), rate)
            self.bucket.tokens = max(self.bucket.tokens, 1.0)  # the sleep earned this read
            self.bucket.take()


class _Watcher:
    def __init__(self, hub: TaskWatchers, latest: TaskSnapshot) -> None:
        self.hub = hub
        self.latest = latest
        self.followers: set[Follower] = set()
        self.job = asyncio.create_task(self._run(), name=f"watch {latest.task_id}")

    def drop(self, follower: Follower) -> None:
        self.followers.discard(follower)
        if not self.followers:
            self.job.cancel()
            self.hub.forget(self)

    def _publish(self, snapshot: TaskSnapshot) -> None:
        self.latest = snapshot
        for follower in self.followers:
            follower.pending = snapshot
            follower.wake.set()

    def _end(self, why: End | None) -> None:
        self.hub.forget(self)
        for follower in self.followers:
            follower.ended = why
            follower._watcher = None
            follower.wake.set()
        self.followers.clear()

    async def _run(self) -> None:
        store, task_id, owner = self.hub.store, self.latest.task_id, self.latest.owner
        pace = _Pace(self.hub.rate_factor, self.hub.burst)
        cursor = b""
        why: End | None = None
        try:
            while True:
                asked = time.monotonic()
                answer = await store.wait_for_events(task_id, cursor)
                if answer is None:
                    why = "gone"
                    break
                new_events, after = answer
                if not new_events and after is not None:
                    # Temporal's long-poll timed out: nothing happened. One that answers at
                    # once with nothing (it should not) must not turn into a busy loop.
                    cursor = after
                    await asyncio.sleep(max(0.0, _MIN_EMPTY_POLL_S - (time.monotonic() - asked)))
                    continue
                await pace.next_read(self.latest.poll_interval_ms)
                snapshot = await store.get(task_id, owner=owner)
                if snapshot is None or is_expired(snapshot, self.hub.clock()):
                    why = "gone"
                    break
                self._publish(snapshot)
                if snapshot.status in TERMINAL_STATUSES:
                    break
                # No cursor after: that run closed but the task did not, so it continued as
                # new. b"" reads the newest run from its start.
                cursor = b"" if after is None else after
        except TaskError as err:
            log.warning("stopped watching %s: %s", task_id, err)
            why = "failed"
        except asyncio.CancelledError:
            raise  # the last follower left
        except Exception:
            log.exception("stopped watching %s", task_id)
            why = "failed"
        self._end(why)


class TaskWatchers:
    """The watchers of this replica, by taskId."""

    def __init__(
        self,
        store: TaskStore,
        clock: Callable[[], datetime],
        rate_factor: int,
        burst: int,
        timer: Timer | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        # What a follow's deadlines, ticks and keep-alives are measured in (following.py).
        self.timer: Timer = timer or MonotonicTimer()
        self.rate_factor = rate_factor
        self.burst = burst
        self._watchers: dict[str, _Watcher] = {}

    def __len__(self) -> int:
        return len(self._watchers)

    def watching(self, task_id: str) -> bool:
        return task_id in self._watchers

    def following(
        self,
        snapshots: Iterable[TaskSnapshot] = (),
        *,
        within_s: float | None = None,
        tick_s: float | None = None,
        quiet_s: float | None = None,
        stop: asyncio.Event | None = None,
    ) -> Updates:
        """Follow these tasks (each a read the caller may see), and any added later, as an
        async iterator of rounds (following.py), in an `async with` block that releases them."""
        return Updates(
            self.follow,
            self.timer,
            snapshots,
            within_s=within_s,
            tick_s=tick_s,
            quiet_s=quiet_s,
            stop=stop,
        )

    def follow(self, snapshot: TaskSnapshot, wake: asyncio.Event) -> Follower:
        """Follow a task the caller may read (its owner's snapshot, just read): the follower
        starts with the newest snapshot known. A terminal task gets no watcher. What `following`
        feeds its rounds from; a consumer uses `following`."""
        if snapshot.status in TERMINAL_STATUSES:
            return Follower(wake, pending=snapshot)
        watcher = self._watchers.get(snapshot.task_id)
        if watcher is None:
            watcher = self._watchers[snapshot.task_id] = _Watcher(self, snapshot)
        elif snapshot.sequence > watcher.latest.sequence:
            watcher.latest = snapshot
        follower = Follower(wake, pending=watcher.latest, _watcher=watcher)
        watcher.followers.add(follower)
        return follower

    def forget(self, watcher: _Watcher) -> None:
        if self._watchers.get(watcher.latest.task_id) is watcher:
            del self._watchers[watcher.latest.task_id]
