"""A task's steps (the memo's `steps`, published by `deploy` and any task workflow) as a
picture: one row per step, a bar placed on the task's time axis and coloured by status, then
the step's duration, exit code and the tail of its output (templates/_timeline.html draws
them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp_server.inbox.templating import macro
from mcp_server.inbox.times import duration, parse_time
from mcp_tasks.contracts.task_state import STEP_STATUSES


@dataclass(frozen=True)
class Track:
    """A step's bar on the task's time axis, in percent of it (the SVG's viewBox is 100)."""

    x: str
    width: str


@dataclass(frozen=True)
class StepRow:
    name: str
    status: str  # as the step gives it
    state: str  # what its bar stands for (a step without a status is pending)
    css: str
    track: Track | None  # None: the bare rail
    took: str | None
    exit_code: object
    rollback: str | None
    output: object


def _css(status: str) -> str:
    return "s-" + (status.replace(" ", "-") if status in STEP_STATUSES else "pending")


def _span(steps: list[dict[str, Any]], now: datetime) -> tuple[datetime, float] | None:
    starts = [t for s in steps if (t := parse_time(s.get("startedAt"))) is not None]
    if not starts:
        return None
    ends = [parse_time(s.get("endedAt")) or now for s in steps if s.get("startedAt")]
    first = min(starts)
    return first, max(1.0, (max(ends) - first).total_seconds())


def _track(
    step: dict[str, Any], span: tuple[datetime, float] | None, now: datetime
) -> Track | None:
    status = str(step.get("status", "pending"))
    started = parse_time(step.get("startedAt"))
    ended = parse_time(step.get("endedAt")) or (now if started else None)
    if span is None or started is None or ended is None:
        # Not started: a mark at the end of the axis while it waits, else the bare rail.
        x, width = (96.0, 4.0) if status == "waiting" else (0.0, 0.0)
    else:
        first, total = span
        x = min(98.5, max(0.0, (started - first).total_seconds() / total * 100))
        width = min(100 - x, max(1.5, (ended - started).total_seconds() / total * 100))
    return Track(f"{x:.2f}", f"{width:.2f}") if width else None


def _took(step: dict[str, Any], now: datetime) -> str | None:
    started = parse_time(step.get("startedAt"))
    if started is None:
        return None
    ended = parse_time(step.get("endedAt"))
    took = duration(((ended or now) - started).total_seconds())
    return took if ended else f"{took} so far"


def _rollback(step: dict[str, Any]) -> str | None:
    rollback = step.get("rollback")
    if isinstance(rollback, dict):
        return f"exit {rollback.get('exitCode')}"
    return str(rollback) if rollback else None


def step_rows(steps: list[dict[str, Any]] | None, now: datetime) -> list[StepRow]:
    span = _span(steps or [], now)
    return [
        StepRow(
            name=str(step.get("name", "?")),
            status=str(step.get("status")),
            state=str(step.get("status", "pending")),
            css=_css(str(step.get("status"))),
            track=_track(step, span, now),
            took=_took(step, now),
            exit_code=step.get("exitCode"),
            rollback=_rollback(step),
            output=step.get("outputTail"),
        )
        for step in steps or []
    ]


def render_timeline(steps: list[dict[str, Any]] | None, now: datetime) -> str:
    return str(macro("_timeline.html", "timeline")(step_rows(steps, now)))
