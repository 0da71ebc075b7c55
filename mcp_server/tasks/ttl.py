"""How long a task stays readable (wire §2.11).

`ttlMs` counts from `createdAt`. A task that closes late in its TTL (at worst: it timed out at
the TTL itself) stays readable a little longer, so its client can still see how it ended, and
its `ttlMs` grows to say so (the spec lets ttlMs change): half the TTL, at most 10 minutes.
Temporal's namespace retention must keep closed workflows at least `kept_for(ttl)`.
"""

from __future__ import annotations

from mcp_server.protocol.wire import parse_iso

MAX_CLOSED_GRACE_MS = 10 * 60 * 1000


def closed_grace_ms(ttl_ms: int) -> int:
    return min(MAX_CLOSED_GRACE_MS, ttl_ms // 2)


def kept_for(ttl_ms: int) -> int:
    """The longest a task with this TTL can stay readable."""
    return ttl_ms + closed_grace_ms(ttl_ms)


def ttl_after_close(created_at: str, closed_at: str, ttl_ms: int | None) -> int | None:
    if ttl_ms is None:
        return None
    ran_ms = int((parse_iso(closed_at) - parse_iso(created_at)).total_seconds() * 1000)
    return max(ttl_ms, ran_ms + closed_grace_ms(ttl_ms))
