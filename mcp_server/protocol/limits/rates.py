"""Per-principal rate limits of the calls that write to a task, and of "not found" lookups.

- `tasks/update` (and the follow-up tool `task_respond`, and the MRTR resume of `tools/call`
  with `requestState`) and `tasks/cancel` (both eras, and `task_cancel`): a token bucket per
  principal, `burst` calls at once, then `per_minute`. So too `events/subscribe` with
  `events/unsubscribe` (each may POST a handshake), and 2025-11-25 `initialize`.
- Lookups that end "not found": a bucket per principal too. A lookup takes a token before it
  asks the store and gives it back when the task was found, so only "not found" answers spend
  the bucket, and a principal can never have more than `burst` of them in flight. Every "not
  found" counts the same (missing, someone else's, expired, an impossible taskId), so being
  limited tells nothing about which it was. This bounds guessing taskIds and the work each
  guess costs the server (a Temporal read and the common not-found deadline, tasks/access.py).
- A limited call is refused before it does anything, in the shape of the MCP rate-limit draft
  (SEP "Standardize Rate-Limiting Errors", modelcontextprotocol seps/0000-rate-limited-error.md)
  but with this server's code: RATE_LIMITED (-31000, not the draft's -32023, which another draft
  claims too and the spec reserves), HTTP 429, `data.retryAfterMs` (RL-1), `Retry-After` in
  whole seconds rounded up (RL-3), and `data.limit` / `data.remaining` with the
  `RateLimit-Limit` / `RateLimit-Remaining` headers that must match them (RL-4, RL-5). A token
  bucket has no fixed window: `limit` is its burst (what a full bucket allows at once) and
  `remaining` the whole tokens left, 0 when a call is refused. `rate_limited` builds it for
  every limiter (this module's and the tasks/get poll limiter, limits.py).
- A rate of 0 turns a limit off. Buckets live in this replica's memory, at most `_MAX_BUCKETS`
  principals each (the least recently seen are forgotten, i.e. start full again;
  mcp_tasks/token_buckets.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_server.protocol.frame.errors import RATE_LIMITED, McpError
from mcp_tasks.settings import Settings
from mcp_tasks.token_buckets import TokenBucket, TokenBuckets


def rate_limited(
    message: str, retry_after_ms: int, *, limit: int, remaining: int, **extra: Any
) -> McpError:
    """RATE_LIMITED in the rate-limit draft's shape: `data.retryAfterMs`, `limit`, `remaining`
    (and `extra`), HTTP 429, `Retry-After` (whole seconds, at least 1) and the `RateLimit-*`
    headers that match the data."""
    data = {"retryAfterMs": retry_after_ms, "limit": limit, "remaining": remaining, **extra}
    headers = {
        "Retry-After": str(max(1, math.ceil(retry_after_ms / 1000))),
        "RateLimit-Limit": str(limit),
        "RateLimit-Remaining": str(remaining),
    }
    return McpError(RATE_LIMITED, message, data, http_status=429, headers=headers)


class PrincipalLimiter:
    """A token bucket per principal: `burst` at once, refilled at `per_minute`."""

    def __init__(
        self,
        what: str,
        per_minute: int,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.per_minute = per_minute
        self.burst = max(1, burst)
        self._buckets: TokenBuckets[str, TokenBucket] = TokenBuckets(
            lambda now: TokenBucket(self.burst, now), clock
        )

    def _rate(self, _: TokenBucket) -> float:
        return self.per_minute / 60  # tokens per second

    def take(self, principal: str) -> None:
        """Spend one token of `principal`'s bucket, or raise RATE_LIMITED when it is empty."""
        if not self.per_minute:
            return
        bucket = self._buckets.refilled(principal, self._rate)
        if bucket.take():
            return
        wait_ms = math.ceil(bucket.seconds_to_next(self._rate(bucket)) * 1000)
        raise rate_limited(
            f"Too many {self.what}: at most {self.per_minute} a minute after a burst of "
            f"{self.burst}; retry in {wait_ms} ms",
            wait_ms,
            limit=self.burst,
            remaining=int(bucket.tokens),
        )

    def give_back(self, principal: str) -> None:
        """Return the token `take` spent (the call turned out not to count)."""
        bucket = self._buckets.get(principal) if self.per_minute else None
        if bucket is not None:
            bucket.give_back()


@dataclass(frozen=True)
class RateLimits:
    updates: PrincipalLimiter
    cancels: PrincipalLimiter
    misses: PrincipalLimiter
    events: PrincipalLimiter
    initializes: PrincipalLimiter

    @classmethod
    def of(cls, settings: Settings, clock: Callable[[], float] = time.monotonic) -> RateLimits:
        """The limits of `settings`; `clock` is their monotonic time (tests move it)."""
        return cls(
            updates=PrincipalLimiter(
                "answers to tasks (tasks/update, task_respond)",
                settings.update_rate_per_minute,
                settings.update_burst,
                clock,
            ),
            cancels=PrincipalLimiter(
                "cancellations (tasks/cancel, task_cancel)",
                settings.cancel_rate_per_minute,
                settings.cancel_burst,
                clock,
            ),
            misses=PrincipalLimiter(
                'task lookups answered "not found"',
                settings.not_found_rate_per_minute,
                settings.not_found_burst,
                clock,
            ),
            events=PrincipalLimiter(
                "event subscription changes (events/subscribe, events/unsubscribe)",
                settings.events_rate_per_minute,
                settings.events_burst,
                clock,
            ),
            initializes=PrincipalLimiter(
                "sessions opened (initialize)",
                settings.initialize_rate_per_minute,
                settings.initialize_burst,
                clock,
            ),
        )

    @classmethod
    def off(cls) -> RateLimits:
        unlimited = Settings(
            update_rate_per_minute=0,
            cancel_rate_per_minute=0,
            not_found_rate_per_minute=0,
            events_rate_per_minute=0,
            initialize_rate_per_minute=0,
        )
        return cls.of(unlimited)
