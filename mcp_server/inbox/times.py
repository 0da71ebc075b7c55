"""Times as the inbox shows them: a step's or a decision's timestamp read leniently, a moment
and how long ago it was, a duration in words."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 timestamp as an aware datetime; one without a timezone is read as UTC.
    None for anything else (a step's times come from any workflow, checked by nobody)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def when(moment: datetime, now: datetime) -> str:
    """ "2026-12-04 10:31:05 UTC (3 min ago)"."""
    stamp = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{stamp} ({duration((now - moment).total_seconds())} ago)"


def duration(seconds: float) -> str:
    """3 s, 2 min 5 s, 4 h 10 min, 3 d 2 h."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"
