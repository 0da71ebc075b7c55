"""The pollIntervalMs a task advertises: the tool's own interval while the task is fresh,
longer the longer it has been quiet.

Rule: a task whose last change (`lastUpdatedAt`) is less than `FRESH_S` (30 s) ago advertises
exactly its tool's interval (the base). After that the interval doubles for each doubling of the
quiet time: quiet 30-60 s is 2 x base, 60-120 s is 4 x base, 120-240 s is 8 x base, and so on,
up to a cap: `MCP_TASKS_POLL_INTERVAL_MAX_MS` (default 60,000), or the base if that is larger.
A cap of 0 turns the rule off (every task advertises its base). The advertised interval never
exceeds about a third of the quiet time (base <= 5 s), so a change is seen late by at most that.

The tasks/get poll limiter keeps counting against the base interval, so a client that follows
either interval is never refused. Pure: no I/O, no clock of its own.
"""

from __future__ import annotations

from datetime import datetime

FRESH_S = 30.0
DEFAULT_MAX_MS = 60_000


def quiet_seconds(last_updated_at: str, now: datetime) -> float | None:
    """Seconds since `last_updated_at` (ISO 8601, e.g. 2026-08-01T10:30:00.123Z); None when it
    cannot be read."""
    try:
        changed = datetime.fromisoformat(last_updated_at)
    except (TypeError, ValueError):
        return None
    if changed.tzinfo is None or now.tzinfo is None:
        return None
    return (now - changed).total_seconds()


def advertised_ms(base_ms: int, last_updated_at: str, now: datetime, max_ms: int) -> int:
    """The pollIntervalMs to send for a task whose tool polls every `base_ms`."""
    quiet = quiet_seconds(last_updated_at, now)
    if max_ms <= 0 or base_ms <= 0 or quiet is None or quiet < FRESH_S:
        return base_ms
    cap = max(base_ms, max_ms)
    interval, threshold = base_ms, FRESH_S
    while quiet >= threshold and interval < cap:
        interval, threshold = interval * 2, threshold * 2
    return min(cap, interval)
