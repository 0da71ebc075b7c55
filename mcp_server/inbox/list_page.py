"""The inbox's list: what waits for the viewer, oldest first, a page at a time.

Each row shows the tool, the question's own message (its first line), a summary of the task's
arguments (e.g. `pipeline=release`), whose decision it awaits and how long it has waited. The
page ends with where it is in the whole list and a link to the next page (paging.py), so no
waiting task is out of reach however many newer ones arrive.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any
from urllib.parse import quote

from mcp_server.inbox.forms import message_of
from mcp_server.inbox.html import duration, h, join, page, parse_time
from mcp_server.inbox.paging import WaitingPage
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


def _awaits(waiting: Waiting) -> str:
    names = sorted({n for k in waiting.request_keys for n in waiting.snapshot.approvers.get(k, [])})
    if waiting.mine:
        who = f"awaits {describe_approvers(names)}" if names else "awaits you"
        return f'yours<div class="from">{h(who)}</div>'
    asked = f'<div class="from">asked by {h(waiting.requested_by)}</div>'
    return "as approver" + (asked if waiting.requested_by else "")


def _row(waiting: Waiting, arguments: dict[str, Any], now: datetime) -> str:
    question = question_of(waiting)
    summary = summary_of(arguments, question)
    args = f'<div class="args">{h(summary)}</div>' if summary else ""
    step = waiting.status_message or ""
    return (
        f'<tr data-task="{h(waiting.task_id)}"><td><a href="/inbox/tasks/{h(waiting.task_id)}">'
        f'<span class="tool">{h(waiting.tool)}</span></a>{args}'
        f'<div class="id">{h(waiting.task_id)}</div></td>'
        f'<td class="msg"><div class="question">{h(question)}</div>'
        f'<div class="step">{h(step)}</div></td>'
        f'<td class="whose">{_awaits(waiting)}</td>'
        f'<td class="age" title="{h(waiting.created_at)}">{h(age(waiting.created_at, now))}</td>'
        "</tr>"
    )


def _pager(shown: WaitingPage) -> str:
    if shown.total == 0:
        return ""
    if not shown.tasks:
        where = f"{shown.total} waiting; none after this point"
    else:
        last = shown.first + len(shown.tasks) - 1
        where = f"{shown.first} to {last} of {shown.total}, oldest first"
    links = []
    if shown.after is not None:
        links.append('<a href="/inbox" class="first">← Oldest</a>')
    if shown.next is not None:
        links.append(f'<a href="/inbox?after={quote(shown.next)}" class="next">Next page →</a>')
    capped = (
        f'<p class="error" role="alert">More tasks wait than the inbox reads at once: it reads '
        f"the newest {shown.read}. Answer or cancel some to see the older ones.</p>"
        if shown.capped
        else ""
    )
    return f'{capped}<nav class="pager"><span>{h(where)}</span>{join(links)}</nav>'


def list_section(shown: WaitingPage, arguments: dict[str, dict[str, Any]], now: datetime) -> str:
    if not shown.tasks and shown.total:
        inner = '<div class="empty"><p class="big">No more tasks on this page.</p></div>'
    elif not shown.tasks:
        inner = (
            '<div class="empty"><p class="big">Nothing waits for you.</p>'
            "<p>Tasks that need your decision appear here as soon as they ask.</p></div>"
        )
    else:
        rows = join(_row(w, arguments.get(w.task_id, {}), now) for w in shown.tasks)
        inner = (
            '<table class="tasks"><thead><tr><th>Task</th><th>Question</th><th>Role</th>'
            f"<th>Age</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    count = f"{shown.total} waiting" if shown.total else "all clear"
    return (
        f'<section id="list" data-version="{h(shown.version)}"><div class="heading"><h1>Waiting '
        f'for your input</h1><span class="count">{h(count)}</span></div>{inner}'
        f"{_pager(shown)}</section>"
    )


def list_page(
    shown: WaitingPage,
    arguments: dict[str, dict[str, Any]],
    now: datetime,
    user: str,
    logout: str | None,
) -> str:
    body = list_section(shown, arguments, now)
    return page("Inbox", body, user=user, logout_csrf=logout, live="/inbox/events")
