"""A task's steps (the memo's `steps`, published by `deploy` and any task workflow) as a
picture: one row per step, a bar placed on the task's time axis and coloured by status (an
SVG with presentation attributes only: the CSP allows no inline style), then the step's
duration, exit code and the tail of its output."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mcp_server.inbox.html import duration, h, join, parse_time
from mcp_tasks.contracts.task_state import STEP_STATUSES


def _css(status: str) -> str:
    return "s-" + (status.replace(" ", "-") if status in STEP_STATUSES else "pending")


def _span(steps: list[dict[str, Any]], now: datetime) -> tuple[datetime, float] | None:
    starts = [t for s in steps if (t := parse_time(s.get("startedAt"))) is not None]
    if not starts:
        return None
    ends = [parse_time(s.get("endedAt")) or now for s in steps if s.get("startedAt")]
    first = min(starts)
    return first, max(1.0, (max(ends) - first).total_seconds())


def _bar(step: dict[str, Any], span: tuple[datetime, float] | None, now: datetime) -> str:
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
    track = (
        f'<rect class="track {_css(status)}" x="{x:.2f}" y="0" width="{width:.2f}" '
        'height="10" rx="1"/>'
        if width
        else ""
    )
    return (
        '<svg class="gantt" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" '
        f'aria-label="{h(status)}"><rect class="rail" x="0" y="0" width="100" height="10" '
        f'rx="1"/>{track}</svg>'
    )


def _facts(step: dict[str, Any], now: datetime) -> str:
    facts = [f'<span class="badge {_css(str(step.get("status")))}">{h(step.get("status"))}</span>']
    started = parse_time(step.get("startedAt"))
    if started is not None:
        ended = parse_time(step.get("endedAt"))
        took = duration(((ended or now) - started).total_seconds())
        facts.append(f"<span>{h(took)}{'' if ended else ' so far'}</span>")
    if step.get("exitCode") is not None:
        facts.append(f"<span>exit {h(step['exitCode'])}</span>")
    rollback = step.get("rollback")
    if isinstance(rollback, dict):
        code = rollback.get("exitCode")
        facts.append(f'<span class="dim">rollback: exit {h(code)}</span>')
    elif rollback:
        facts.append(f'<span class="dim">rollback: {h(rollback)}</span>')
    return join(facts)


def render_timeline(steps: list[dict[str, Any]] | None, now: datetime) -> str:
    if not steps:
        return '<p class="note">This task publishes no steps.</p>'
    span = _span(steps, now)
    rows = []
    for step in steps:
        tail = step.get("outputTail")
        output = (
            f'<details><summary>output</summary><pre class="tail">{h(tail)}</pre></details>'
            if tail
            else ""
        )
        rows.append(
            f'<li class="step {_css(str(step.get("status")))}">'
            f'<div class="step-name">{h(step.get("name", "?"))}</div>'
            f'<div class="step-bar">{_bar(step, span, now)}</div>'
            f'<div class="step-facts">{_facts(step, now)}</div>{output}</li>'
        )
    return f'<ol class="timeline">{join(rows)}</ol>'
