"""The inbox's list: what waits for the viewer, oldest first, a page at a time.

Each row shows the tool, the question's own message (its first line), a summary of the task's
arguments (e.g. `pipeline=release`), whose decision it awaits and how long it has waited. The
page ends with where it is in the whole list and a link to the next page (paging.py), so no
waiting task is out of reach however many newer ones arrive. templates/_list.html draws it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from mcp_server.inbox.forms import message_of
from mcp_server.inbox.paging import WaitingPage
from mcp_server.inbox.templating import macro, render_page
from mcp_server.inbox.times import duration, parse_time
from mcp_server.tasks.waiting import Waiting
from mcp_tasks.contracts.approvers import describe_approvers

MAX_MESSAGE = 160
MAX_SUMMARY = 120


def age(created_at: str, now: datetime) -> str:
    created = parse_time(created_at)
    return "?" if created is None else duration((now - created).total_seconds())


def list_version(waiting: list[Waiting]) -> str:
    text = ",".join(w.version for w in waiting)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"


def question_of(waiting: Waiting) -> str:
    """The first line of the first outstanding question's message, else the status message."""
    for key in waiting.request_keys:
        request = waiting.snapshot.input_requests.get(key)
        message = message_of(request).strip() if isinstance(request, dict) else ""
        if message:
            return _cut(message.splitlines()[0], MAX_MESSAGE)
    return waiting.status_message or "Waiting for input"


def summary_of(arguments: dict[str, Any], question: str = "") -> str:
    """`pipeline=release, dry_run=false`: the task's arguments, cut to a line (an argument the
    question already says, e.g. request_approval's `message`, is left out)."""
    parts = []
    for name, value in arguments.items():
        if isinstance(value, str) and value and value in question:
            continue
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        parts.append(f"{name}={_cut(shown, 40)}")
    return _cut(", ".join(parts), MAX_SUMMARY)


@dataclass(frozen=True)
class Row:
    """One waiting task in the list."""

    task_id: str
    tool: str
    summary: str  # its arguments in a line
    question: str
    step: str  # its status message
    mine: bool  # its creator's (else: the viewer is one of its approvers)
    awaits: str  # mine: whose decision it awaits
    requested_by: str | None  # as approver: who asked
    created_at: str
    age: str


def _awaits(waiting: Waiting) -> str:
    names = sorted({n for k in waiting.request_keys for n in waiting.snapshot.approvers.get(k, [])})
    return f"awaits {describe_approvers(names)}" if names else "awaits you"


def _row(waiting: Waiting, arguments: dict[str, Any], now: datetime) -> Row:
    question = question_of(waiting)
    return Row(
        task_id=waiting.task_id,
        tool=waiting.tool,
        summary=summary_of(arguments, question),
        question=question,
        step=waiting.status_message or "",
        mine=waiting.mine,
        awaits=_awaits(waiting),
        requested_by=waiting.requested_by,
        created_at=waiting.created_at,
        age=age(waiting.created_at, now),
    )


def _where(shown: WaitingPage) -> str:
    if not shown.tasks:
        return f"{shown.total} waiting; none after this point"
    last = shown.first + len(shown.tasks) - 1
    return f"{shown.first} to {last} of {shown.total}, oldest first"


def _section_context(
    shown: WaitingPage, arguments: dict[str, dict[str, Any]], now: datetime
) -> dict[str, object]:
    return {
        "shown": shown,
        "rows": [_row(w, arguments.get(w.task_id, {}), now) for w in shown.tasks],
        "where": _where(shown),
        "next": None if shown.next is None else quote(shown.next),
    }


def list_section(shown: WaitingPage, arguments: dict[str, dict[str, Any]], now: datetime) -> str:
    return str(macro("_list.html", "list_section")(**_section_context(shown, arguments, now)))


def list_page(
    shown: WaitingPage,
    arguments: dict[str, dict[str, Any]],
    now: datetime,
    user: str,
    logout: str | None,
) -> str:
    return render_page(
        "list.html",
        title="Inbox",
        user=user,
        logout_csrf=logout,
        live="/inbox/events",
        **_section_context(shown, arguments, now),
    )
