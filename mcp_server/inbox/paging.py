"""A page of the inbox's list: the waiting tasks oldest first (createdAt, then taskId), cut
after the task a cursor names (`after` = "<createdAt> <taskId>" of the last task of the previous
page). The cursor is the position, not an offset: tasks that arrive or leave meanwhile never
push one out of reach. A cursor that is not of this shape starts at the beginning."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_server.tasks.waiting import Waiting

PAGE_SIZE = 50


@dataclass(frozen=True)
class WaitingPage:
    tasks: list[Waiting]  # this page, oldest first
    total: int  # how many wait in all
    first: int  # the 1-based position of the page's first task
    after: str | None  # the cursor this page starts after (None: the first page)
    next: str | None  # the cursor of the next page (None: this is the last)
    version: str  # of the whole list (events.py compares it)
    capped: bool = False  # more were waiting than were read (`read`, the newest of them)
    read: int = 0


def cursor_of(waiting: Waiting) -> str:
    return f"{waiting.created_at} {waiting.task_id}"


def _position(after: str | None) -> tuple[str, str] | None:
    if not after or " " not in after:
        return None
    created_at, task_id = after.split(" ", 1)
    return created_at, task_id


def page_of(
    waiting: list[Waiting],
    after: str | None,
    version: str,
    size: int = PAGE_SIZE,
    capped: bool = False,
) -> WaitingPage:
    ordered = sorted(waiting, key=lambda w: (w.created_at, w.task_id))
    position = _position(after)
    start = 0
    if position is not None:
        start = next(
            (i for i, w in enumerate(ordered) if (w.created_at, w.task_id) > position),
            len(ordered),
        )
    tasks = ordered[start : start + size]
    more = start + size < len(ordered)
    return WaitingPage(
        tasks=tasks,
        total=len(ordered),
        first=start + 1,
        after=after if position is not None else None,
        next=cursor_of(tasks[-1]) if tasks and more else None,
        version=version,
        capped=capped,
        read=len(ordered),
    )
