"""Per-principal limits, each answered with a clear error (never a silent drop).

- `tasks/update` and MRTR retries: at most `max_input_responses` answers of at most
  `max_input_response_bytes` (encoded JSON) in one request: -32602.
- Open tasks per principal: at most `max_open_tasks_per_principal` open at once, exactly, across
  replicas: each task reserves a slot in the principal's quota workflow before it starts
  (mcp_server/tasks/quota.py, workflows/quota.py). A full quota is QUOTA_EXCEEDED, HTTP 429.
- `tasks/get` polling: a token bucket per (principal, task) refilled `poll_rate_factor` times
  faster than the task's own pollIntervalMs, after a burst of `poll_burst`. A client that honours
  pollIntervalMs is never limited; one that polls much faster gets RATE_LIMITED, HTTP 429, in
  the rate-limit draft's shape (limits/rates.py `rate_limited`) plus `data.pollIntervalMs`.
  Buckets live in this replica's memory.
- `tasks/update`, `tasks/cancel` and "not found" lookups: per principal (limits/rates.py).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcp_server.protocol.frame.errors import QUOTA_EXCEEDED, McpError, invalid_params
from mcp_server.protocol.limits.rates import RateLimits, rate_limited
from mcp_server.tasks.quota import QuotaExceeded
from mcp_tasks.token_buckets import TokenBucket, TokenBuckets

T = TypeVar("T")

_DEFAULT_POLL_MS = 1000


class _PollBucket(TokenBucket):
    """A (principal, task) bucket, refilled at a rate that follows the task's pollIntervalMs."""

    def __init__(self, burst: int, now: float) -> None:
        super().__init__(burst, now)
        self.poll_ms = _DEFAULT_POLL_MS


class PollLimiter:
    def __init__(
        self, factor: int, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.factor = max(1, factor)
        self.burst = max(1, burst)
        self._buckets: TokenBuckets[tuple[str, str], _PollBucket] = TokenBuckets(
            lambda now: _PollBucket(self.burst, now), clock
        )

    def _rate(self, bucket: _PollBucket) -> float:
        return self.factor / (bucket.poll_ms / 1000)  # tokens per second

    def check(self, principal: str, task_id: str) -> None:
        bucket = self._buckets.refilled((principal, task_id), self._rate)
        if bucket.take():
            return
        wait_ms = math.ceil(bucket.seconds_to_next(self._rate(bucket)) * 1000)
        raise rate_limited(
            f"tasks/get is polled much faster than this task's pollIntervalMs "
            f"({bucket.poll_ms} ms); retry in {wait_ms} ms",
            wait_ms,
            limit=self.burst,
            remaining=int(bucket.tokens),
            pollIntervalMs=bucket.poll_ms,
        )

    def learn_interval(self, principal: str, task_id: str, poll_ms: int | None) -> None:
        bucket = self._buckets.get((principal, task_id))
        if bucket is not None and poll_ms:
            bucket.poll_ms = poll_ms


@dataclass(frozen=True)
class Limits:
    max_input_responses: int
    max_input_response_bytes: int
    max_open_tasks_per_principal: int
    polls: PollLimiter
    # Per principal: tasks/update, tasks/cancel and "not found" lookups (limits/rates.py).
    rates: RateLimits = field(default_factory=RateLimits.off)

    def check_input_responses(self, responses: dict[str, Any]) -> None:
        if len(responses) > self.max_input_responses:
            raise invalid_params(
                f"inputResponses has {len(responses)} entries; at most "
                f"{self.max_input_responses} are accepted in one request"
            )
        size = len(json.dumps(responses, separators=(",", ":"), ensure_ascii=False).encode())
        if size > self.max_input_response_bytes:
            raise invalid_params(
                f"inputResponses is {size} bytes; at most {self.max_input_response_bytes} "
                "are accepted in one request"
            )

    async def within_open_task_quota(self, create: Callable[[int], Awaitable[T]]) -> T:
        """`create(quota)`, which reserves one of the caller's `quota` open-task slots before it
        starts a task (0: no quota, nothing reserved); a full quota is QUOTA_EXCEEDED."""
        limit = self.max_open_tasks_per_principal
        try:
            return await create(limit)
        except QuotaExceeded as err:
            raise McpError(
                QUOTA_EXCEEDED,
                f"you have {err.open_tasks} open tasks, the most this server allows per caller "
                f"is {limit}; wait for some to finish or cancel them",
                {"openTasks": err.open_tasks, "limit": limit},
                http_status=429,
                headers={"Retry-After": "30"},
            ) from None
