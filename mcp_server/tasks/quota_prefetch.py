"""Open-task slots reserved ahead, so that a create costs one `start_workflow`.

A reservation is an update of the principal's quota workflow (quota.py): a round trip through
a worker, several times dearer than the start itself. While a principal is far from its limit,
this replica reserves a few slots ahead, each under a fresh task id, and a create takes one of
those ids as its taskId: nothing but the start is left between the request and Temporal.

Rules implemented:
- Exactness stays the quota workflow's: a slot reserved ahead is held there like any other,
  under the id the task will have, so a task started on it releases it when it closes, as
  every task does (or not at all when the quota workflow granted it lazily: `take` says so),
  and no replica can take more than the limit.
- Ahead-reservation only while the principal's last known headroom (limit minus the slots held
  when the quota workflow last answered) is at least `HEADROOM_FACTOR` times the batch: near
  the limit every create reserves for itself, so a small quota is not eaten by idle slots.
- An id is used within `MAX_AGE_S` of its reservation or released: the quota workflow drops a
  held id that Temporal does not know after its grace (60 s) when it reclaims, and an id used
  after that would start a task without a slot.
- Calls with an idempotency key never take one (their taskId is derived from the key).
- At most one refill per principal in flight from this replica, through the same batched
  update path as every reservation (one update per principal at a time).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

from mcp_server.tasks.quota import QuotaReservations

log = logging.getLogger("mcp_server.tasks.quota_prefetch")

BATCH = 8
HEADROOM_FACTOR = 4
MAX_AGE_S = 30.0

_Key = tuple[str, int]


class PrefetchedSlots:
    def __init__(
        self,
        reservations: QuotaReservations,
        new_id: Callable[[], str],
        *,
        batch: int = BATCH,
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reservations = reservations
        self._new_id = new_id
        self._batch = batch
        self._max_age_s = max_age_s
        self._clock = clock
        # Per principal: (task id, reserved at, lazy slot) of each slot held ahead.
        self._pools: dict[_Key, deque[tuple[str, float, bool]]] = {}
        self._headroom: dict[_Key, int] = {}
        self._refills: dict[_Key, asyncio.Task[None]] = {}
        self._releasing: set[asyncio.Task[None]] = set()

    def take(self, owner: str, limit: int) -> tuple[str, bool] | None:
        """A task id whose slot is already held, and whether that slot is lazy (its task sends
        no release); or None (reserve one for the call)."""
        key = (owner, limit)
        pool = self._pools.get(key)
        taken = None
        if pool:
            self._drop_stale(owner, pool)
            if pool:
                task_id, _, lazy = pool.popleft()
                taken = task_id, lazy
        if len(pool or ()) <= self._batch // 2:
            self._refill(key)
        return taken

    def learn(self, owner: str, limit: int, open_tasks: int) -> None:
        """What the quota workflow answered last: how far the principal is from its limit
        (a refill starts when that is far enough and few slots are left)."""
        key = (owner, limit)
        self._headroom[key] = limit - open_tasks
        if len(self._pools.get(key, ())) <= self._batch // 2:
            self._refill(key)

    def available(self, owner: str, limit: int) -> int:
        return len(self._pools.get((owner, limit), ()))

    def _drop_stale(self, owner: str, pool: deque[tuple[str, float, bool]]) -> None:
        oldest_kept = self._clock() - self._max_age_s
        while pool and pool[0][1] < oldest_kept:
            self._release(owner, pool.popleft()[0])

    def _refill(self, key: _Key) -> None:
        if key in self._refills or self._headroom.get(key, 0) < HEADROOM_FACTOR * self._batch:
            return
        job = asyncio.get_running_loop().create_task(self._reserve_batch(key))
        self._refills[key] = job
        job.add_done_callback(lambda _: self._refills.pop(key, None))

    async def _reserve_batch(self, key: _Key) -> None:
        owner, limit = key
        ids = [self._new_id() for _ in range(self._batch)]
        reserved_at = self._clock()
        try:
            answer = await self._reservations.reserve_ids(owner, ids, limit)
        except Exception as err:  # the next create reserves for itself, as without this
            log.info("could not reserve task slots ahead: %s", err)
            self._headroom.pop(key, None)
            return
        granted, lazy = set(answer.granted), set(answer.lazy)
        pool = self._pools.setdefault(key, deque())
        pool.extend((t, reserved_at, t in lazy) for t in ids if t in granted)
        self._headroom[key] = limit - answer.open_tasks

    def _release(self, owner: str, task_id: str) -> None:
        job = asyncio.get_running_loop().create_task(self._reservations.release(owner, task_id))
        self._releasing.add(job)
        job.add_done_callback(self._releasing.discard)

    def release_all(self) -> None:
        """Give back every slot held ahead (the server is stopping)."""
        for (owner, _), pool in self._pools.items():
            while pool:
                self._release(owner, pool.popleft()[0])

    async def drain(self) -> None:
        """Wait for the releases under way (tests, shutdown)."""
        if self._releasing:
            await asyncio.gather(*self._releasing, return_exceptions=True)
