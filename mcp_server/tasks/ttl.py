"""How long a task stays readable (wire §2.11): every TTL rule of the server lives here.

Rules implemented:
- `ttlMs` counts from `createdAt`; past it, the task is "not found" (`is_expired`).
- A task that closes late in its TTL (at worst: it timed out at the TTL itself) stays readable a
  little longer, so its client can still see how it ended, and its `ttlMs` grows to say so (the
  spec lets ttlMs change): half the TTL, at most 10 minutes (`ttl_after_close`).
- A task still running at its TTL is about to be closed by Temporal (its execution timeout is
  the TTL) and gets the same grace.
- Temporal's namespace retention must keep closed workflows at least `kept_for(ttl)`.
- A task without a TTL (`ttlMs` null) never expires.
- An expired task is deleted from Temporal (expiry.py): by the read that finds it expired, or
  by the workers' sweeper; its idempotency key (idempotency.py) is then free again.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mcp_tasks.contracts.task_state import parse_timestamp
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES

if TYPE_CHECKING:  # only a type here: the tool registry imports this module, and stays light
    from mcp_server.tasks.snapshots import TaskSnapshot

MAX_CLOSED_GRACE_MS = 10 * 60 * 1000


def closed_grace_ms(ttl_ms: int) -> int:
    return min(MAX_CLOSED_GRACE_MS, ttl_ms // 2)


def kept_for(ttl_ms: int) -> int:
    """The longest a task with this TTL can stay readable."""
    return ttl_ms + closed_grace_ms(ttl_ms)


def ttl_after_close(created_at: str, closed_at: str, ttl_ms: int | None) -> int | None:
    """The ttlMs of a task that closed at `closed_at`: its TTL, or longer if it closed late."""
    if ttl_ms is None:
        return None
    ran_ms = int((parse_timestamp(closed_at) - parse_timestamp(created_at)).total_seconds() * 1000)
    return max(ttl_ms, ran_ms + closed_grace_ms(ttl_ms))


def readable_until(snapshot: TaskSnapshot) -> datetime | None:
    """When the task stops being readable; None if never."""
    if snapshot.ttl_ms is None:
        return None
    # A closed task's ttlMs already includes its grace (ttl_after_close).
    readable_ms = snapshot.ttl_ms
    if snapshot.status not in TERMINAL_STATUSES:
        readable_ms = kept_for(snapshot.ttl_ms)
    return parse_timestamp(snapshot.created_at) + timedelta(milliseconds=readable_ms)


def is_expired(snapshot: TaskSnapshot, now: datetime) -> bool:
    until = readable_until(snapshot)
    return until is not None and now >= until


def closed_expired(created_at: str, closed_at: str, ttl_ms: int | None, now: datetime) -> bool:
    """Whether a task that closed at `closed_at` has expired at `now` (what `is_expired` says
    of its closed snapshot)."""
    ttl = ttl_after_close(created_at, closed_at, ttl_ms)
    return ttl is not None and now >= parse_timestamp(created_at) + timedelta(milliseconds=ttl)
