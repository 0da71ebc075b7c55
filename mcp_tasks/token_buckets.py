"""The token bucket every rate limit of the server uses: the `tasks/get` poll limiter
(protocol/limits/per_principal.py), the per-principal rate limits (protocol/limits/rates.py)
and the pace of a task watcher's reads (tasks/watchers.py).

- A bucket holds at most `burst` tokens and starts full; it refills continuously at a rate the
  caller gives at each refill (a poll limit's rate follows the task's pollIntervalMs).
- `TokenBuckets` keeps one bucket per key, the `max_keys` most recently used: an older one is
  forgotten, and starts full again when its key comes back (memory stays bounded whatever the
  number of principals or tasks).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

MAX_KEYS = 100_000


class TokenBucket:
    """`burst` tokens at most, refilled at `per_second` from the last refill to `now`."""

    def __init__(self, burst: int, now: float) -> None:
        self.burst = max(1, burst)
        self.tokens = float(self.burst)
        self.updated = now

    def refill(self, now: float, per_second: float) -> None:
        self.tokens = min(float(self.burst), self.tokens + (now - self.updated) * per_second)
        self.updated = now

    def take(self) -> bool:
        """Spend one token; False (and nothing spent) when there is not a whole one."""
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    def seconds_to_next(self, per_second: float) -> float:
        """How long until one whole token is there, at `per_second`."""
        return max(0.0, (1 - self.tokens) / per_second)

    def give_back(self) -> None:
        """Return a token that `take` spent (what it paid for turned out not to count)."""
        self.tokens = min(float(self.burst), self.tokens + 1)


K = TypeVar("K", bound=Hashable)
B = TypeVar("B", bound=TokenBucket)


class TokenBuckets(Generic[K, B]):
    """One bucket per key, made by `new(now)`; the `max_keys` most recently used are kept."""

    def __init__(
        self,
        new: Callable[[float], B],
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.new = new
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: OrderedDict[K, B] = OrderedDict()

    def touch(self, key: K) -> B:
        """The bucket of `key` (a full new one if it has none), now the most recently used."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = self.new(self.clock())
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(key)
        return bucket

    def refilled(self, key: K, per_second: Callable[[B], float]) -> B:
        """The bucket of `key`, refilled up to now at the rate `per_second(bucket)`."""
        bucket = self.touch(key)
        bucket.refill(self.clock(), per_second(bucket))
        return bucket

    def get(self, key: K) -> B | None:
        """The bucket of `key` if it has one (it is not touched)."""
        return self._buckets.get(key)

    def __len__(self) -> int:
        return len(self._buckets)
