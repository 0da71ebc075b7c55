"""A clock for TTL arithmetic that a test moves instead of waiting: the wall clock plus an
offset, so time still flows (tasks close after they were created), until `stop_at` holds it
at one instant (a boundary tested exactly, whatever the machine's load)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class SettableClock:
    def __init__(self) -> None:
        self.offset = timedelta(0)
        self.stopped_at: datetime | None = None

    def __call__(self) -> datetime:
        if self.stopped_at is not None:
            return self.stopped_at
        return datetime.now(UTC) + self.offset

    def advance(self, by: timedelta) -> None:
        if self.stopped_at is not None:
            self.stopped_at += by
        else:
            self.offset += by

    def stop_at(self, instant: datetime) -> None:
        self.stopped_at = instant
