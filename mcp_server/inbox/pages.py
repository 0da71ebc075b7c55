"""The inbox's task pages and the fragments their script refreshes: a task's live part (how it
stands or ended, how far it reported it is, the decisions made, who asked and answered, the
step timeline), its forms (or, for a viewer who may not answer, the question read-only with
whose decision it awaits), the confirmation of a rejection, the sign-in page and the error
page. The list is list_page.py. The templates (templates/) draw them, escaping every value."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from starlette.datastructures import FormData

from mcp_server.inbox.approval import choice_of
from mcp_server.inbox.decided import Decided, decided_items
from mcp_server.inbox.forms import (
    CONFIRM_FIELD,
    FIELD_PREFIX,
    Question,
    form_schema,
    heading_of,
    message_of,
    question_form,
)
from mcp_server.inbox.list_page import age
from mcp_server.inbox.outcome import Outcome, outcome_of
from mcp_server.inbox.templating import macro, render_page
from mcp_server.inbox.timeline import StepRow, step_rows
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


@dataclass(frozen=True)
class Progress:
    label: str  # `step 2 of 3`, `40%`
    done: str
    total: str | None  # None: no bar (no total was given)


def progress_of(progress: dict[str, float] | None) -> Progress | None:
    """How far the task is, as it reported (TaskState.progress): `step 2 of 3` or `40%`, with
    a bar when it gave a total; None when it reported no numbers."""
    label = progress_label(progress)
    if progress is None or label is None:
        return None
    done, total = progress["progress"], progress.get("total")
    shown = f"{total:g}" if total is not None and total > 0 else None
    return Progress(label, f"{done:g}", shown)


def render_progress(progress: dict[str, float] | None) -> str:
    return str(macro("_task.html", "progress")(progress_of(progress)))


@dataclass(frozen=True)
class Live:
    """A task's live part: what its page's script refreshes when the task changes."""

    task: TaskSnapshot
    version: str
    forms_version: str
    outcome: Outcome
    message: str
    detail: str | None  # the result's text, unless the status message says it already
    progress: Progress | None
    decisions: list[Decided]
    steps: list[StepRow]
    awaiting: list[tuple[str, str]]  # request key -> whose decision it awaits
    created: str
    updated: str


def live_of(snapshot: TaskSnapshot, now: datetime, decided: dict[str, Decision]) -> Live:
    ended = outcome_of(snapshot)
    message = snapshot.status_message or ""
    awaiting = []
    for key in snapshot.input_requests:
        names = snapshot.approvers.get(key)
        awaiting.append((key, describe_approvers(names) if names else "the caller"))
    return Live(
        task=snapshot,
        version=task_version(snapshot),
        forms_version=forms_version(snapshot),
        outcome=ended,
        message=message,
        detail=ended.detail if ended.detail and ended.detail not in message else None,
        progress=progress_of(snapshot.progress),
        decisions=decided_items(decided, now),
        steps=step_rows(snapshot.steps, now),
        awaiting=awaiting,
        created=age(snapshot.created_at, now),
        updated=age(snapshot.last_updated_at, now),
    )


def task_live(snapshot: TaskSnapshot, now: datetime, decided: dict[str, Decision]) -> str:
    return str(macro("_task.html", "live")(live_of(snapshot, now, decided)))


def _read_only(key: str, request: dict[str, Any], snapshot: TaskSnapshot) -> Question:
    """The question, read-only, for a viewer who may not answer it (its requester)."""
    names = snapshot.approvers.get(key)
    message = message_of(request)
    choice = choice_of(form_schema(request), message)
    return Question(
        key,
        heading_of(key, request),
        message,
        False,
        choices=[o.label for o in choice.options] if choice else [],
        awaits=describe_approvers(names) if names else "the principal that created the task",
    )


def questions_of(snapshot: TaskSnapshot, csrf: str, answerable: frozenset[str]) -> list[Question]:
    """The outstanding requests: a form for each one the viewer may answer (`answerable`)."""
    ends = consequence(snapshot)
    return [
        question_form(snapshot.task_id, key, request, csrf, ends)
        if key in answerable
        else _read_only(key, request, snapshot)
        for key, request in snapshot.input_requests.items()
    ]


def task_forms(
    snapshot: TaskSnapshot, csrf: str, answerable: frozenset[str], problem: str | None = None
) -> str:
    questions = questions_of(snapshot, csrf, answerable)
    return str(macro("_task.html", "forms")(questions, answerable, problem))


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
    """`who`: the signed-in user and the sign-out form's token (None: no sign-out); `about`:
    what the task was asked to do (its arguments and its tool's description of them, e.g. a
    deploy's pipeline); `web_ui`: the task's workflow in the team's Temporal Web UI, linked
    from the crumbs."""
    return render_page(
        "task.html",
        title=snapshot.tool or "Task",
        user=who[0],
        logout_csrf=who[1],
        live=f"/inbox/events?task={snapshot.task_id}",
        task=snapshot,
        about=about,
        web_ui=web_ui,
        view=live_of(snapshot, now, decided),
        questions=questions_of(snapshot, csrf, answerable),
        answerable=answerable,
        problem=problem,
    )


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
    return render_page(
        "confirm.html",
        title="Confirm",
        user=who[0],
        logout_csrf=who[1],
        task=snapshot,
        verb=chosen[0] if chosen else "Decline to answer",
        message=message,
        consequence=consequence(snapshot),
        csrf=csrf,
        key=key,
        confirm_field=CONFIRM_FIELD,
        action=action,
        kept=[
            (name, value)
            for name, value in form.multi_items()
            if name.startswith(FIELD_PREFIX) and isinstance(value, str)
        ],
    )


def login_page(csrf: str, problem: str | None = None) -> str:
    return render_page("login.html", title="Sign in", csrf=csrf, problem=problem)


def error_page(title: str, message: str) -> str:
    return render_page("error.html", title=title, message=message)
