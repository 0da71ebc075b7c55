"""Clocks a test moves instead of waiting.

- SettableClock, for TTL arithmetic: the wall clock plus an offset, so time still flows (tasks
  close after they were created), until `stop_at` holds it at one instant (a boundary tested
  exactly, whatever the machine's load).
- ManualTimer, for a follow's deadlines, ticks and keep-alives: it stands still until advanced.
"""

from __future__ import annotations

import asyncio
import math
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


class ManualTimer:
    """The monotonic time of a follow (mcp_server/tasks/following.py's `Timer`), moved by the
    test: nothing it times passes until `advance` says so, however slow the machine."""

    def __init__(self) -> None:
        self._now = 0.0
        self._due: list[tuple[float, asyncio.Event]] = []
        self._waited_on = asyncio.Event()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
        for at, due in self._due:
            if at <= self._now:
                due.set()

    @property
    def waiting(self) -> int:
        """How many waits are pending."""
        return len(self._due)

    async def waited_on(self) -> None:
        """Return once something waits on this timer."""
        while not self._due:
            self._waited_on.clear()
            await self._waited_on.wait()

    async def wait(self, event: asyncio.Event, at_most_s: float | None) -> None:
        if event.is_set() or (at_most_s is not None and at_most_s <= 0):
            return
        entry = (self._now + (math.inf if at_most_s is None else at_most_s), asyncio.Event())
        self._due.append(entry)
        self._waited_on.set()
        waits = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(entry[1].wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._due.remove(entry)
            for wait in waits:
                wait.cancel()
