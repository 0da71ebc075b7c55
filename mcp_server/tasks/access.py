"""Who may read a task, and how long a "not found" takes (wire §2.12), for any `TaskStore`.

Rules implemented:
- A task is found only by its owner (or an approver of one of its requests, approvers.py) and
  only within its TTL (ttl.py). Anything else is "not
  found", alike whether the task never existed, is someone else's, or has expired; a taskId
  too long or not printable is not found without asking the store.
- The owner is compared before anything else is read (the store's `get(task_id, owner)`).
- Every "not found" is answered at one common deadline measured from the start of the lookup:
  `NOT_FOUND_FLOOR_S`, or the usual time of reading a running task when that is longer (a
  slow backend; such a read costs about two lookups of someone else's task). Without it, the
  time of the answer tells a missing task from someone else's: Temporal answers NOT_FOUND
  0.7-1.5 ms sooner than it describes a task.
- The usual time is learnt from found lookups of running tasks read afresh only (a closed
  task may come from a cache, a running one from the reads a replica follows, followed.py:
  neither tells Temporal's pace). Never from "not found" answers: a foreign
  lookup is slower than a missing one, so learning from them would move the next deadline
  by the kind of the last lookup, and time would tell it again.
- The deadline is kept to within microseconds, without threads: asyncio wakes a sleeper up to
  a millisecond late (its selector rounds timeouts up to whole milliseconds), by an amount
  that depends on when the sleep began, which would keep each kind of lookup's own phase. So
  the wait sleeps until just before the deadline, then yields to the event loop (every other
  task keeps running) until the deadline has passed: at most `_SPIN_S` of busy waiting.
- Nothing is pooled or shared between callers but the learnt usual time, which the store
  keeps (`TaskStore.not_found`, not_found.py: one per store, made with it): each waiting lookup
  is one coroutine. With `misses` (the per-principal "not found" limiter,
  protocol/limits/rates.py) a lookup takes a token first and gives it back when found, so a
  principal has at most its burst of "not found" lookups in flight and a bounded rate of them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from mcp_server.tasks.errors import TaskNotFound
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.store import TaskStore
from mcp_server.tasks.ttl import is_expired
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES
from mcp_tasks.identity import Identity

MAX_TASK_ID_LENGTH = 256
# Longer than asyncio's worst lateness on an idle loop (1 ms plus scheduling), so the sleep
# ends before the deadline and the busy wait alone decides when the answer leaves.
_SPIN_S = 0.002


class MissLimiter(Protocol):
    def take(self, principal: str) -> None: ...

    def give_back(self, principal: str) -> None: ...


async def wait_until(deadline: float) -> None:
    """Return as soon as `time.perf_counter()` has passed `deadline` (see the module's rules)."""
    early = deadline - _SPIN_S - time.perf_counter()
    if early > 0:
        await asyncio.sleep(early)
    # A busy wait on purpose (an Event would wake as late as the sleep above); each round
    # yields to the event loop, so other requests are served meanwhile.
    while time.perf_counter() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0)


async def find_task(
    store: TaskStore,
    task_id: str,
    owner: str,
    clock: Callable[[], datetime],
    misses: MissLimiter | None = None,
    identity: Identity | None = None,
) -> TaskSnapshot | None:
    """The task if it exists, belongs to `owner` (or names `identity` as an approver,
    approvers.py) and is within its TTL; else None, at the common deadline of every "not
    found". With `misses`, a lookup the owner's "not found" bucket has no room for is refused
    (RATE_LIMITED) before the store is asked."""
    if misses is not None:
        misses.take(owner)
    try:
        snapshot = await _find(store, task_id, owner, clock, identity)
    except Exception:  # the store failed: no answer either way (a cancelled call still counts)
        if misses is not None:
            misses.give_back(owner)
        raise
    if snapshot is not None and misses is not None:
        misses.give_back(owner)
    return snapshot


async def _find(
    store: TaskStore,
    task_id: str,
    owner: str,
    clock: Callable[[], datetime],
    identity: Identity | None,
) -> TaskSnapshot | None:
    started = time.perf_counter()
    deadline = store.not_found
    if len(task_id) <= MAX_TASK_ID_LENGTH and task_id.isprintable():
        snapshot = await store.get(task_id, owner=owner, identity=identity)
        if snapshot is not None and not is_expired(snapshot, clock()):
            if snapshot.status not in TERMINAL_STATUSES and not snapshot.cached:
                deadline.learn(time.perf_counter() - started)
            return snapshot
    await wait_until(deadline.after(started))
    return None


async def require_task(
    store: TaskStore,
    task_id: str,
    owner: str,
    clock: Callable[[], datetime],
    misses: MissLimiter | None = None,
    identity: Identity | None = None,
) -> TaskSnapshot:
    """`find_task`, with "not found" raised as `TaskNotFound`."""
    snapshot = await find_task(store, task_id, owner, clock, misses, identity)
    if snapshot is None:
        raise TaskNotFound(task_id)
    return snapshot
