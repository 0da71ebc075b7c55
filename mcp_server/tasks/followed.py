"""Running tasks this replica follows, so that a `tasks/get` of a task that has not changed is
answered without a call to Temporal (docs/concepts/temporal-mapping.md, "Reads a replica
follows").

Rules implemented:
- What is kept is a read made as before (snapshot_reads.py: `describe()`, the memo, the
  history's tail), the only source of truth; it is answered again until the task's history
  grows.
- Following a task is one history long-poll of the run that was read (the call listen's watchers
  make, watchers.py): it returns when an event is added, or empty after Temporal's long-poll
  timeout (20 s). An event past the read's history length marks the copy stale, and the next
  read goes to Temporal. A quiet task costs 3 calls a minute (180 an hour), however often it
  is polled; each change costs one more read, by the next poll.
- Following pays only for a task polled more often than once per long-poll timeout: a task is
  followed from its second read within `FOLLOW_GAP_S` of the first (one polled less often costs
  one `describe()` per poll, as before, which is less), and let go once nobody has read it for
  `IDLE_S` (checked whenever the long-poll answers: within IDLE_S + 20 s).
- What a read is kept for depends on what Temporal was doing for the task (`Stillness`):
  - `quiet` (no pending workflow task, no pending activity): until the history grows.
  - `awaiting_worker` (a workflow task no worker has completed yet: a signal, a cancellation
    request or a timer the workflow has not processed, whose answers the store read from the
    history's tail, as before): until the history grows (the worker completing it adds events;
    so does any new signal), and at most until the long-poll's next empty answer (within
    20 s): a workflow task that keeps failing counts its attempts with no new event, and
    the read shows them. This is what keeps a replica's reads off Temporal when workers lag
    behind (a backlog of workflow tasks under load), which is when Temporal is busiest.
  - `busy` (a pending activity): never answered again as it is: its attempt, progress and
    elapsed time change with no event in the history (it may stand in for a slow read, below).
- Never an older state after a newer one: a read that began before a change was seen (`mark`,
  then `changed`) is answered but not kept as fresh, and a read with a smaller sequence
  (sequence.py) than the copy is answered with the copy.
- tasks/cancel and steering on this replica mark the task changed once their signal or
  cancellation is in Temporal (`changed`), so the caller's next read goes to Temporal (and
  waits for it: `through`); another replica sees the change when its long-poll answers.
  tasks/update does too, unless the copy was current until the answer: then the copy takes the
  answer as a read would show it (`answered`), and stands in for that read as below.
- A change the long-poll saw (not this replica's own) is read again without keeping the
  poll waiting on a busy Temporal (stale-while-revalidate): the first read after it starts
  one read of Temporal, which every read of the task shares while it is in flight; each
  waits for it up to `REVALIDATE_WAIT_S` (50 ms), and past that is answered the copy read
  before the change, for at most `STALE_S` (5 s) after the change was seen (or, for a copy
  that was never fresh, after it was read). So an idle
  Temporal shows every change at once, and a saturated one shows it once its read returns
  (5 s at most, or the read waits for it as before), while the polls keep their pace.
- A task this replica starts is followed from its start (`seed`), its copy the state it was
  started with: a client polls a task it just created, and the first polls then need no
  read. One not polled is let go as any other (an initial long-poll, which returns the history
  so far at once, and at most two more: about 3 calls).
- Listen's watchers, after their own long-poll saw events, mark the task changed too, before
  they read (store.wait_for_events), and wait for that read (`through`).
- Bounded: at most `max_tasks` followed and `max_bytes` of memo kept; beyond either, the task
  read least recently is let go. A task not followed is read as before.
- A run that closes ends the task's following `STALE_S` later: the copy stands in for the
  read of the closed task (which the terminal cache then answers) while that read is slow.
- A long-poll that fails (Temporal unreachable, the task deleted) lets the task go, and one not
  answered within `VOUCHED_S` (a Temporal that hangs) no longer vouches for the copy: the next
  read goes to Temporal, and answers or fails as it did without this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Coroutine
from dataclasses import dataclass, replace
from typing import Any, Literal

from prometheus_client import Counter

from mcp_server.tasks.errors import TaskError
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_tasks.contracts.task_status import running_status

log = logging.getLogger("mcp_server.tasks.followed")

# The events of one run after `cursor`, waited for: (the id of the last one, 0 for none; the
# cursor after them, None once the run's history is complete), or None: no such run.
History = Callable[[str, str, bytes], Awaitable[tuple[int, bytes | None] | None]]

# What Temporal was doing for a task when it was read (the module's rules).
Stillness = Literal["quiet", "awaiting_worker", "busy"]

# Temporal answers an empty history long-poll after 20 s: following a task costs 3 calls a
# minute, so it pays for a task read more often than that.
FOLLOW_GAP_S = 20.0
# A little over the gap: a task polled every 20-25 s stays followed, which costs about what its
# describes would, rather than being let go and followed again by turns.
IDLE_S = 25.0
# A long-poll unanswered for longer than Temporal's own timeout plus a margin: Temporal may be
# hung, and the copy is not answered any more.
VOUCHED_S = 25.0
_MIN_EMPTY_POLL_S = 1.0
# A started workflow's history: WorkflowExecutionStarted, WorkflowTaskScheduled.
STARTED_LENGTH = 2
# Stale-while-revalidate (the module's rules): how long a read waits for the read of Temporal
# in flight, and how old a copy may be to be answered in its place.
REVALIDATE_WAIT_S = 0.05  # an idle Temporal answers a describe() in 3.5 ms (p99 9.4): 5x that
STALE_S = 5.0
# Tasks read once (when), to follow them at their second read; and tasks changed recently.
_REMEMBERED = 8192
_ENTRY_BYTES = 2048  # a snapshot's Python objects beyond its memo, roughly

# Defined here, where the store counts them; listed in observability/metrics.py.
TASK_READS = Counter(
    "mcp_tasks_task_reads",
    "Task reads (tasks/get, task lookups, listen's reads) by source: followed (a task this "
    "replica follows, no Temporal call), stale (a followed task's copy, answered while the read "
    "of its change was slow to return), terminal (the closed-task cache), temporal (a "
    "describe() of the workflow)",
    ["source"],
)
READ_SOURCES = ("followed", "stale", "terminal", "temporal")
for _source in READ_SOURCES:
    TASK_READS.labels(_source)


@dataclass(eq=False)
class _Followed:
    task_id: str
    run_id: str
    length: int  # the history length of the kept read, in its run
    snapshot: TaskSnapshot  # the newest read answered, marked `cached`
    fresh: bool
    until_empty_poll: bool  # the kept read awaited a worker: stale at the next empty long-poll
    size: int
    read_at: float
    vouched_at: float  # when the long-poll in flight was sent
    stale_since: float  # since when the copy may be out of date (inf while it is fresh)
    through: bool = False  # a change of this replica's own is not in the copy: read through
    job: asyncio.Task[None] | None = None


class FollowedTasks:
    """The tasks this replica follows, by taskId (the rules are the module's)."""

    def __init__(
        self,
        history: History,
        max_tasks: int,
        max_bytes: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._history = history
        self._sleep = sleep
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self._clock = clock
        self._followed: OrderedDict[str, _Followed] = OrderedDict()
        self._bytes = 0
        self._tick = 0
        self._changed: OrderedDict[str, int] = OrderedDict()
        self._forgotten_tick = 0  # the newest change no longer in `_changed`
        self._read_once: OrderedDict[str, float] = OrderedDict()
        self._refreshes: dict[str, asyncio.Task[TaskSnapshot | None]] = {}

    def __len__(self) -> int:
        return len(self._followed)

    @property
    def bytes(self) -> int:
        return self._bytes

    def answer(self, task_id: str) -> TaskSnapshot | None:
        """The kept read of a followed task that has not changed since, or None: read it."""
        entry = self._followed.get(task_id)
        if entry is None or not entry.fresh:
            return None
        now = self._clock()
        if now - entry.vouched_at > VOUCHED_S:
            return None
        return self._read_from(entry, now)

    def stale_copy(self, task_id: str) -> TaskSnapshot | None:
        """The copy of a followed task that changed since it was read, which a read may answer
        while the read of the change is slow (the module's rules); None: read through."""
        entry = self._followed.get(task_id)
        if entry is None or entry.fresh or entry.through:
            return None
        now = self._clock()
        if now - entry.stale_since > STALE_S or now - entry.vouched_at > VOUCHED_S:
            return None
        return self._read_from(entry, now)

    def _read_from(self, entry: _Followed, now: float) -> TaskSnapshot:
        """The copy, answered `now`: the task was read (IDLE_S), and is the last to let go."""
        entry.read_at = now
        self._followed.move_to_end(entry.task_id)
        return entry.snapshot

    def refreshing(
        self, task_id: str, read: Callable[[], Coroutine[Any, Any, TaskSnapshot | None]]
    ) -> asyncio.Task[TaskSnapshot | None]:
        """The read of `task_id` in flight, else `read()` started: the reads of a stale copy
        share one call to Temporal."""
        job = self._refreshes.get(task_id)
        if job is None:
            job = asyncio.create_task(read(), name=f"refresh {task_id}")
            self._refreshes[task_id] = job
            job.add_done_callback(lambda done: self._refreshed(task_id, done))
        return job

    def _refreshed(self, task_id: str, job: asyncio.Task[TaskSnapshot | None]) -> None:
        if self._refreshes.get(task_id) is job:
            del self._refreshes[task_id]
        if not job.cancelled() and job.exception() is not None:
            log.info("reading %s again failed: %s", task_id, job.exception())

    def mark(self) -> int:
        """Taken before reading Temporal, and given back to `keep`."""
        return self._tick

    def changed(self, task_id: str, through: bool = True) -> None:
        """The task changed (or may have): its next read goes to Temporal; `through`: a change
        this replica made (an answer, a cancel, steering), which that read waits for."""
        self._tick += 1
        self._changed[task_id] = self._tick
        self._changed.move_to_end(task_id)
        if len(self._changed) > _REMEMBERED:
            _, tick = self._changed.popitem(last=False)
            self._forgotten_tick = max(self._forgotten_tick, tick)
        entry = self._followed.get(task_id)
        if entry is not None:
            if entry.fresh:
                entry.stale_since = self._clock()
            entry.fresh = False
            entry.through = entry.through or through

    def seed(self, snapshot: TaskSnapshot, run_id: str, memo_bytes: int, mark: int) -> None:
        """A task this replica just started (`mark` taken before the start), followed from its
        first moment with the state it was started with: the memo the server wrote, its first
        workflow task pending (`STARTED_LENGTH` events), so that its first polls need no read
        either. A worker that already ran that workflow task (an eager start) has added events,
        which the first long-poll reports at once."""
        if self.max_tasks <= 0:
            return
        self._read_once[snapshot.task_id] = self._clock()  # followed at this "read"
        seeded = replace(snapshot, sequence=STARTED_LENGTH)
        self.keep(seeded, run_id, STARTED_LENGTH, memo_bytes, "awaiting_worker", mark)

    def answered(self, task_id: str, questions: Collection[str]) -> None:
        """This replica's answers to `questions` are in Temporal. A copy that was current until
        now takes them as a read would show them (from the history's tail: the questions gone,
        `running_status`), one event further, and stands in while the read of the task is on
        its way (stale while revalidating); any other copy is read through (`changed`)."""
        entry = self._followed.get(task_id)
        if entry is None or not entry.fresh:
            self.changed(task_id)
            return
        copy = entry.snapshot
        pending = {k: v for k, v in copy.input_requests.items() if k not in questions}
        status, said = running_status(copy.status, unanswered=bool(pending))
        self.changed(task_id, through=False)
        entry.snapshot = replace(
            copy,
            status=status,
            status_message=said or copy.status_message,
            input_requests=pending,
            sequence=copy.sequence + 1,  # the signal's event
        )

    def _changed_since(self, task_id: str, mark: int) -> bool:
        return self._forgotten_tick > mark or self._changed.get(task_id, 0) > mark

    def keep(
        self,
        snapshot: TaskSnapshot,
        run_id: str,
        length: int,
        memo_bytes: int,
        stillness: Stillness,
        mark: int,
    ) -> TaskSnapshot:
        """What to answer for `snapshot`, the read of a running task begun at `mark` (run
        `run_id`, `length` events, what Temporal was doing for it); kept when the task is
        followed."""
        task_id = snapshot.task_id
        entry = self._followed.get(task_id)
        if entry is not None and entry.snapshot.sequence > snapshot.sequence:
            return entry.snapshot  # a read that was overtaken: the newer one stands
        if self.max_tasks <= 0:
            return snapshot
        now = self._clock()
        if entry is not None and entry.run_id != run_id:  # it continued as new
            self._let_go(entry)
            entry = None
        keepable = stillness != "busy"
        after_changes = not self._changed_since(task_id, mark)  # began after every change seen
        fresh = keepable and after_changes
        until_empty_poll = stillness == "awaiting_worker"
        since = math.inf if fresh else now  # a copy not kept as fresh is current when read
        size = memo_bytes + _ENTRY_BYTES
        kept = replace(snapshot, cached=True)
        if entry is None:
            first = self._read_once.pop(task_id, None)
            if not keepable or first is None or now - first > FOLLOW_GAP_S:
                self._read_once[task_id] = now
                if len(self._read_once) > _REMEMBERED:
                    self._read_once.popitem(last=False)
                return snapshot
            entry = _Followed(
                task_id, run_id, length, kept, fresh, until_empty_poll, size, now, now, since
            )
            self._followed[task_id] = entry
            self._bytes += size
            entry.job = asyncio.create_task(self._follow(entry), name=f"follow {task_id}")
        else:
            self._bytes += size - entry.size
            entry.length, entry.snapshot, entry.fresh, entry.size = length, kept, fresh, size
            entry.until_empty_poll, entry.stale_since = until_empty_poll, since
            if after_changes:
                entry.through = False
            entry.read_at = now
            self._followed.move_to_end(task_id)
        while self._followed and (
            len(self._followed) > self.max_tasks or self._bytes > self.max_bytes
        ):
            self._let_go(next(iter(self._followed.values())))
        return snapshot

    def _let_go(self, entry: _Followed) -> None:
        if self._followed.get(entry.task_id) is not entry:
            return
        del self._followed[entry.task_id]
        self._bytes -= entry.size
        # Read again soon (a task that continued as new), it is followed again at once.
        self._read_once[entry.task_id] = entry.read_at
        if entry.job is not None and entry.job is not asyncio.current_task():
            entry.job.cancel()

    async def _follow(self, entry: _Followed) -> None:
        task_id, cursor = entry.task_id, b""
        try:
            while True:
                asked = entry.vouched_at = self._clock()
                answer = await self._history(task_id, entry.run_id, cursor)
                if answer is None:
                    break  # deleted
                last, after = answer
                if last > entry.length or after is None:
                    self.changed(task_id, through=False)
                elif not last and entry.until_empty_poll and entry.fresh:
                    # A workflow task's attempts may have grown.
                    self.changed(task_id, through=False)
                if after is None:
                    # The run closed: the task ended, or goes on in a new run. The copy stays
                    # to stand in while the read of how it ended is slow (stale while
                    # revalidating), then the task is let go: no call in the meantime.
                    await self._sleep(STALE_S)
                    break
                if self._clock() - entry.read_at > IDLE_S:
                    break
                if not last:
                    # An empty answer at once (Temporal should wait) must not spin.
                    await asyncio.sleep(max(0.0, _MIN_EMPTY_POLL_S - (self._clock() - asked)))
                cursor = after
        except TaskError as err:
            log.info("stopped following %s: %s", task_id, err)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("stopped following %s", task_id)
        self._let_go(entry)

    async def close(self) -> None:
        jobs: list[asyncio.Task[Any]] = [
            entry.job for entry in self._followed.values() if entry.job is not None
        ]
        jobs += self._refreshes.values()
        self._followed.clear()
        self._bytes = 0
        for job in jobs:
            job.cancel()
        for job in jobs:
            with contextlib.suppress(asyncio.CancelledError):
                await job
