"""The inbox's task pages and the fragments their script refreshes: a task's live part (how it
stands or ended, how far it reported it is, the decisions made, who asked and answered, the
step timeline), its forms (or, for a viewer who may not answer, the question read-only with
whose decision it awaits), the confirmation of a rejection, the sign-in page and the error
page. The list is list_page.py. Every task text is escaped (html.py's `h`)."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from starlette.datastructures import FormData

from mcp_server.inbox.approval import choice_of
from mcp_server.inbox.decided import render_decisions
from mcp_server.inbox.forms import (
    CONFIRM_FIELD,
    FIELD_PREFIX,
    form_schema,
    heading_of,
    message_of,
    render_request,
)
from mcp_server.inbox.html import h, hidden, join, page
from mcp_server.inbox.list_page import age
from mcp_server.inbox.outcome import outcome_of
from mcp_server.inbox.timeline import render_timeline
from mcp_server.tasks.snapshots import TaskSnapshot, progress_label
from mcp_server.tasks.task_history import Decision
from mcp_tasks.contracts.approvers import describe_approvers


def consequence(snapshot: TaskSnapshot) -> str:
    """What a rejection or a refusal does to the task, said before it is sent."""
    if snapshot.steps is not None:
        return (
            f"This ends {snapshot.tool or 'the task'} and rolls back the steps it has "
            "already completed."
        )
    return f"This ends the question; {snapshot.tool or 'the task'} is told it was refused."


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
            snapshot.progress,
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def forms_version(snapshot: TaskSnapshot) -> str:
    return hashlib.sha256(",".join(sorted(snapshot.input_requests)).encode()).hexdigest()[:16]


def _status_line(snapshot: TaskSnapshot) -> str:
    ended = outcome_of(snapshot)
    message = snapshot.status_message or ""
    detail = (
        f'<pre class="result t-{ended.tone}">{h(ended.detail)}</pre>'
        if ended.detail and ended.detail not in message
        else ""
    )
    return (
        f'<div class="status-line"><span class="pill t-{ended.tone}" '
        f'data-status="{h(snapshot.status)}">{h(ended.label)}</span>'
        f'<span class="msg">{h(message)}</span></div>{detail}'
    )


def render_progress(progress: dict[str, float] | None) -> str:
    """How far the task is, as it reported (TaskState.progress): `step 2 of 3` or `40%`, with
    a bar when it gave a total; nothing when it reported no numbers."""
    label = progress_label(progress)
    if progress is None or label is None:
        return ""
    done, total = progress["progress"], progress.get("total")
    bar = (
        f'<progress value="{done:g}" max="{total:g}" aria-label="{h(label)}"></progress>'
        if total is not None and total > 0
        else ""
    )
    return f'<div class="progress" data-progress="{h(label)}">{bar}<span>{h(label)}</span></div>'


def task_live(snapshot: TaskSnapshot, now: datetime, decided: dict[str, Decision]) -> str:
    return (
        f'<section id="live" data-version="{h(task_version(snapshot))}" '
        f'data-forms="{h(forms_version(snapshot))}">{_status_line(snapshot)}'
        f"{render_progress(snapshot.progress)}"
        f"{render_decisions(decided, now)}"
        f'<div class="grid{"" if snapshot.steps else " single"}">{_steps_card(snapshot, now)}'
        f'<div class="card side"><h2>People</h2>{_who(snapshot)}<h2>Task</h2>'
        f'<dl class="who-list"><dt>Created</dt><dd>{h(age(snapshot.created_at, now))} ago</dd>'
        f"<dt>Updated</dt><dd>{h(age(snapshot.last_updated_at, now))} ago</dd></dl></div>"
        "</div></section>"
    )


def _steps_card(snapshot: TaskSnapshot, now: datetime) -> str:
    """The task's steps; none at all for a task that publishes none (a plain approval), so its
    question is not pushed below the fold by an empty card."""
    if not snapshot.steps:
        return ""
    return f'<div class="card"><h2>Steps</h2>{render_timeline(snapshot.steps, now)}</div>'


def _choices(request: dict[str, Any]) -> str:
    choice = choice_of(form_schema(request), message_of(request))
    if choice is None:
        return ""
    names = " or ".join(f"<em>{h(o.label)}</em>" for o in choice.options)
    return f'<p class="choices">The choice: {names}.</p>'


def _not_yours(key: str, request: dict[str, Any], snapshot: TaskSnapshot) -> str:
    """The question, read-only, for a viewer who may not answer it (its requester)."""
    names = snapshot.approvers.get(key)
    who = describe_approvers(names) if names else "the principal that created the task"
    message = message_of(request)
    text = f'<p class="message">{h(message)}</p>' if message else ""
    return (
        f'<article class="request others" data-key="{h(key)}">'
        f"<h3>{h(heading_of(key, request))}</h3>{text}"
        f"{_choices(request)}"
        f'<p class="note awaits">Awaiting the decision of <strong>{h(who)}</strong>. '
        "You can follow it here; only they can answer.</p></article>"
    )


def task_forms(
    snapshot: TaskSnapshot, csrf: str, answerable: frozenset[str], problem: str | None = None
) -> str:
    """The outstanding requests: a form for each one the viewer may answer (`answerable`)."""
    error = f'<div class="error" role="alert">{h(problem)}</div>' if problem else ""
    if not snapshot.input_requests:
        body = '<p class="note">No question is waiting on this task.</p>'
    else:
        ends = consequence(snapshot)
        body = join(
            render_request(snapshot.task_id, key, request, csrf, ends)
            if key in answerable
            else _not_yours(key, request, snapshot)
            for key, request in snapshot.input_requests.items()
        )
    title = "Your input" if answerable else "The question"
    return f'<section id="forms"><h2>{title}</h2>{error}{body}</section>'


def _heading(snapshot: TaskSnapshot, about: str = "", web_ui: str | None = None) -> str:
    """The tool, the taskId and, when known, what the task was asked to do (`about`: its
    arguments and its tool's description of them, e.g. a deploy's pipeline); `web_ui`: the
    task's workflow in the team's Temporal Web UI, linked from the crumbs."""
    line = f'<p class="about">{h(about)}</p>' if about else ""
    temporal = (
        f' · <a class="web-ui" href="{h(web_ui)}" rel="noopener noreferrer">'
        "Workflow in Temporal's Web UI</a>"
        if web_ui
        else ""
    )
    return (
        f'<nav class="crumbs"><a href="/inbox">← Inbox</a>{temporal}</nav>'
        f'<div class="heading"><h1><span class="tool">{h(snapshot.tool or "task")}</span></h1>'
        f'<span class="id">{h(snapshot.task_id)}</span></div>{line}'
    )


def task_page(
    snapshot: TaskSnapshot,
    now: datetime,
    csrf: str,
    answerable: frozenset[str],
    who: tuple[str, str | None],
    decided: dict[str, Decision],
    problem: str | None = None,
    about: str = "",
    web_ui: str | None = None,
) -> str:
    """`who`: the signed-in user and the sign-out form's token (None: no sign-out); `web_ui`:
    the task's workflow in the team's Temporal Web UI, linked from the crumbs."""
    body = (
        f"{_heading(snapshot, about, web_ui)}{task_live(snapshot, now, decided)}"
        f"{task_forms(snapshot, csrf, answerable, problem)}"
    )
    live = f"/inbox/events?task={h(snapshot.task_id)}"
    return page(snapshot.tool or "Task", body, user=who[0], logout_csrf=who[1], live=live)


def confirm_page(
    snapshot: TaskSnapshot, key: str, form: FormData, csrf: str, who: tuple[str, str | None]
) -> str:
    """Reject (or Decline) again, said plainly: the page a rejection without its confirmation
    gets (a browser without the script, or one whose dialog was bypassed)."""
    action = str(form.get("action"))
    request = snapshot.input_requests.get(key) or {}
    message = message_of(request)
    choice = choice_of(form_schema(request), message)
    chosen = [o.label for o in choice.options if o.action == action] if choice else []
    verb = chosen[0] if chosen else "Decline to answer"
    kept = join(
        hidden(name, value)
        for name, value in form.multi_items()
        if name.startswith(FIELD_PREFIX) and isinstance(value, str)
    )
    body = (
        f'{_heading(snapshot)}<section id="confirm" class="card confirm" role="alertdialog">'
        f'<h2>Are you sure?</h2><p class="big">{h(verb)}?</p>'
        f'<p class="message">{h(message)}</p><p class="warn">{h(consequence(snapshot))}</p>'
        f'<form method="post" action="/inbox/tasks/{h(snapshot.task_id)}/answer">'
        f"{hidden('csrf', csrf)}{hidden('key', key)}{hidden(CONFIRM_FIELD, action)}{kept}"
        f'<div class="actions"><button type="submit" name="action" value="{h(action)}" '
        f'class="danger">Yes, {h(verb[0].lower() + verb[1:])}</button>'
        f'<a class="button" href="/inbox/tasks/{h(snapshot.task_id)}">No, go back</a></div>'
        "</form></section>"
    )
    return page("Confirm", body, user=who[0], logout_csrf=who[1])


def login_page(csrf: str, problem: str | None = None) -> str:
    error = f'<div class="error" role="alert">{h(problem)}</div>' if problem else ""
    body = (
        '<section class="login card"><h1>Sign in</h1><p>Paste the token you were given for '
        "this MCP server (the one your MCP client sends, or an access token from your sign-in "
        "provider). "
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
