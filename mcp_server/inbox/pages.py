"""The inbox's pages and the fragments their script refreshes: the list of waiting tasks, a
task's page (its live part: status, who asked and answered, the step timeline; and its forms),
the sign-in page and the error page. Every task text is escaped (html.py's `h`)."""

from __future__ import annotations

import hashlib
from datetime import datetime

from mcp_server.inbox.forms import render_request
from mcp_server.inbox.html import duration, h, join, page, parse_time
from mcp_server.inbox.timeline import render_timeline
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.waiting import Waiting
from workflows.approvers import describe_approvers


def _age(created_at: str, now: datetime) -> str:
    created = parse_time(created_at)
    return "?" if created is None else duration((now - created).total_seconds())


def _from(waiting: Waiting) -> str:
    if waiting.mine or not waiting.requested_by:
        return ""
    return f'<div class="from">asked by {h(waiting.requested_by)}</div>'


def list_version(waiting: list[Waiting]) -> str:
    text = ",".join(w.version for w in waiting)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def list_section(waiting: list[Waiting], now: datetime) -> str:
    version = list_version(waiting)
    if not waiting:
        inner = (
            '<div class="empty"><p class="big">Nothing waits for you.</p>'
            "<p>Tasks that need your decision appear here as soon as they ask.</p></div>"
        )
    else:
        rows = join(
            f'<tr data-task="{h(w.task_id)}"><td><a href="/inbox/tasks/{h(w.task_id)}">'
            f'<span class="tool">{h(w.tool)}</span></a>'
            f'<div class="id">{h(w.task_id)}</div></td>'
            f'<td class="msg">{h(w.status_message or "")}</td>'
            f'<td class="whose">{"yours" if w.mine else "as approver"}{_from(w)}</td>'
            f'<td class="age" title="{h(w.created_at)}">{h(_age(w.created_at, now))}</td></tr>'
            for w in waiting
        )
        inner = (
            '<table class="tasks"><thead><tr><th>Tool</th><th>Waiting for</th><th>Role</th>'
            f"<th>Age</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    count = f"{len(waiting)} waiting" if waiting else "all clear"
    return (
        f'<section id="list" data-version="{h(version)}"><div class="heading"><h1>Waiting '
        f'for your input</h1><span class="count">{h(count)}</span></div>{inner}</section>'
    )


def list_page(waiting: list[Waiting], now: datetime, user: str, logout: str | None) -> str:
    return page(
        "Inbox", list_section(waiting, now), user=user, logout_csrf=logout, live="/inbox/events"
    )


def _who(snapshot: TaskSnapshot) -> str:
    facts = [f"<dt>Asked by</dt><dd>{h(snapshot.requested_by or 'unknown')}</dd>"]
    for key in snapshot.input_requests:
        names = snapshot.approvers.get(key)
        awaiting = describe_approvers(names) if names else "the caller"
        facts.append(f"<dt>{h(key)}</dt><dd>awaits {h(awaiting)}</dd>")
    for key, by in snapshot.answered_by.items():
        facts.append(f"<dt>{h(key)}</dt><dd>answered by {h(by)}</dd>")
    return f'<dl class="who-list">{join(facts)}</dl>'


def task_version(snapshot: TaskSnapshot) -> str:
    text = repr(
        (
            snapshot.status,
            snapshot.status_message,
            snapshot.last_updated_at,
            sorted(snapshot.input_requests),
            snapshot.steps,
            snapshot.answered_by,
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def forms_version(snapshot: TaskSnapshot) -> str:
    return hashlib.sha256(",".join(sorted(snapshot.input_requests)).encode()).hexdigest()[:16]


def task_live(snapshot: TaskSnapshot, now: datetime) -> str:
    status = h(snapshot.status)
    return (
        f'<section id="live" data-version="{h(task_version(snapshot))}" '
        f'data-forms="{h(forms_version(snapshot))}">'
        f'<div class="status-line"><span class="pill st-{status}">{status.replace("_", " ")}'
        f'</span><span class="msg">{h(snapshot.status_message or "")}</span></div>'
        f'<div class="grid"><div class="card"><h2>Steps</h2>'
        f"{render_timeline(snapshot.steps, now)}</div>"
        f'<div class="card side"><h2>People</h2>{_who(snapshot)}<h2>Task</h2>'
        f'<dl class="who-list"><dt>Created</dt><dd>{h(_age(snapshot.created_at, now))} ago</dd>'
        f"<dt>Updated</dt><dd>{h(_age(snapshot.last_updated_at, now))} ago</dd></dl></div>"
        "</div></section>"
    )


def _not_yours(key: str, snapshot: TaskSnapshot) -> str:
    names = snapshot.approvers.get(key)
    who = describe_approvers(names) if names else "the principal that created the task"
    return (
        f'<article class="request others" data-key="{h(key)}"><h3>{h(key)}</h3>'
        f'<p class="note">Awaiting the decision of {h(who)}.</p></article>'
    )


def task_forms(
    snapshot: TaskSnapshot, csrf: str, answerable: frozenset[str], problem: str | None = None
) -> str:
    """The outstanding requests: a form for each one the viewer may answer (`answerable`)."""
    error = f'<div class="error" role="alert">{h(problem)}</div>' if problem else ""
    if not snapshot.input_requests:
        body = '<p class="note">No question is waiting on this task.</p>'
    else:
        body = join(
            render_request(snapshot.task_id, key, request, csrf)
            if key in answerable
            else _not_yours(key, snapshot)
            for key, request in snapshot.input_requests.items()
        )
    return f'<section id="forms"><h2>Your input</h2>{error}{body}</section>'


def task_page(
    snapshot: TaskSnapshot,
    now: datetime,
    csrf: str,
    answerable: frozenset[str],
    user: str,
    logout: str | None,
    problem: str | None = None,
) -> str:
    body = (
        '<nav class="crumbs"><a href="/inbox">← Inbox</a></nav>'
        f'<div class="heading"><h1><span class="tool">{h(snapshot.tool or "task")}</span></h1>'
        f'<span class="id">{h(snapshot.task_id)}</span></div>'
        f"{task_live(snapshot, now)}{task_forms(snapshot, csrf, answerable, problem)}"
    )
    live = f"/inbox/events?task={h(snapshot.task_id)}"
    return page(snapshot.tool or "Task", body, user=user, logout_csrf=logout, live=live)


def login_page(csrf: str, problem: str | None = None) -> str:
    error = f'<div class="error" role="alert">{h(problem)}</div>' if problem else ""
    body = (
        '<section class="login card"><h1>Sign in</h1><p>Paste the bearer credential you use '
        "with this MCP server (a token of <code>--auth tokens</code>, or an access token). "
        "It is checked once; the inbox then keeps a signed session cookie, never the "
        f'credential.</p>{error}<form method="post" action="/inbox/login">'
        f'<input type="hidden" name="csrf" value="{h(csrf)}">'
        '<div class="field"><label for="token">Credential</label>'
        '<input type="password" name="token" id="token" autocomplete="off" required></div>'
        '<div class="actions"><button type="submit" class="primary">Sign in</button></div>'
        "</form></section>"
    )
    return page("Sign in", body)


def error_page(title: str, message: str) -> str:
    body = (
        f'<section class="card problem"><h1>{h(title)}</h1><p>{h(message)}</p>'
        '<p><a href="/inbox">Back to the inbox</a></p></section>'
    )
    return page(title, body)
