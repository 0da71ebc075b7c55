"""Every text of a task reaches the inbox's pages as text, never as markup: the question, the
status message, the tool and the form's titles, the approvers' names, the answers, the JSON
Schema's descriptions, titles and values, the steps, the result. Each is the attack: a value
that closes its attribute or its element and opens a script, an image with a handler, or a
handler attribute.

A page is parsed as a browser would read it: it holds no element and no attribute but its own,
and the hostile value comes back whole from the text or the attribute it was put in (escaped,
not dropped)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import pytest
from starlette.datastructures import FormData

from mcp_server.inbox.list_page import list_page, list_section
from mcp_server.inbox.pages import confirm_page, error_page, login_page, task_forms, task_page
from mcp_server.inbox.paging import page_of
from mcp_server.inbox.templating import ENVIRONMENT
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.task_history import Decision
from mcp_server.tasks.waiting import Waiting

HOSTILE = "\"'><script>alert(1)</script><img src=x onerror=alert(1)>' onfocus='alert(1)"
# A task's arguments are shown cut to 40 characters each.
SHORT = "\"'><script>alert(1)</script>"
NOW = datetime(2026, 12, 6, 12, 5, tzinfo=UTC)
AT = "2026-12-06T12:00:00Z"
OWN_SCRIPT = "/inbox/static/inbox.js"


class _Read(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


def _shown_as_text(html: str, value: str = HOSTILE) -> None:
    read = _Read()
    read.feed(html)
    read.close()
    for tag, attrs in read.tags:
        assert tag != "img", html
        assert tag != "script" or attrs == [("src", OWN_SCRIPT), ("defer", None)], html
        assert not any(name.startswith("on") for name, _ in attrs), (tag, attrs)
    values = [v for _, attrs in read.tags for _, v in attrs if v is not None]
    assert any(value in text for text in ["".join(read.texts), *values]), html


def _question(message: str = "Ship it?", schema: dict[str, Any] | None = None) -> dict[str, Any]:
    schema = schema or {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "comment": {"type": "string"}},
        "required": ["ok"],
    }
    return {
        "method": "elicitation/create",
        "params": {"message": message, "requestedSchema": schema},
    }


def _task(**fields: Any) -> TaskSnapshot:
    base: dict[str, Any] = {
        "task_id": "t1",
        "owner": "o",
        "status": "input_required",
        "status_message": "Waiting",
        "created_at": AT,
        "last_updated_at": AT,
        "ttl_ms": None,
        "poll_interval_ms": None,
        "input_requests": {"decision": _question()},
        "tool": "deploy",
    }
    return TaskSnapshot(**{**base, **fields})


def _pages(snapshot: TaskSnapshot, decided: dict[str, Decision] | None = None) -> str:
    """The task page for a viewer who may answer, and for one who may not."""
    mine = frozenset(snapshot.input_requests)
    return "".join(
        task_page(snapshot, NOW, "csrf", answerable, ("alice", "out"), decided or {})
        for answerable in (mine, frozenset())
    )


def _listed(snapshot: TaskSnapshot, arguments: dict[str, Any] | None = None) -> str:
    rows = [
        Waiting(
            snapshot.task_id,
            snapshot.tool,
            AT,
            snapshot.status_message,
            ("decision",),
            mine,
            snapshot,
            snapshot.requested_by,
        )
        for mine in (True, False)
    ]
    shown = page_of(rows, None, "v")
    found = {snapshot.task_id: arguments or {}}
    return list_page(shown, found, NOW, "alice", "out") + list_section(shown, found, NOW)


def _schema(**prop: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"field": prop}}


def _decided(answer: dict[str, Any], by: str = "bob") -> str:
    return _pages(_task(answered_by={"old": by}), {"old": Decision(answer, by, AT)})


def _confirm(**kept: str) -> str:
    form = FormData([("action", "reject"), *((f"f.{k}", v) for k, v in kept.items())])
    snapshot = _task(input_requests={"decision": _question(HOSTILE)})
    return confirm_page(snapshot, "decision", form, "csrf", ("alice", None))


UNTRUSTED: dict[str, Callable[[], str]] = {
    "question text": lambda: (
        _pages(_task(input_requests={"decision": _question(HOSTILE)}))
        + _listed(_task(input_requests={"decision": _question(HOSTILE)}))
    ),
    "status message": lambda: (
        _pages(_task(status_message=HOSTILE))
        + _listed(_task(status_message=HOSTILE, input_requests={}))
    ),
    "task title (its tool)": lambda: _pages(_task(tool=HOSTILE)) + _listed(_task(tool=HOSTILE)),
    "task id": lambda: _pages(_task(task_id=HOSTILE)) + _listed(_task(task_id=HOSTILE)),
    "form title": lambda: _pages(
        _task(input_requests={"decision": _question(schema={**_schema(), "title": HOSTILE})})
    ),
    "request key": lambda: _pages(_task(input_requests={HOSTILE: _question()})),
    "approver names": lambda: (
        _pages(_task(approvers={"decision": [HOSTILE]}))
        + _listed(_task(approvers={"decision": [HOSTILE]}))
    ),
    "who asked": lambda: _pages(_task(requested_by=HOSTILE)) + _listed(_task(requested_by=HOSTILE)),
    "who answered": lambda: _pages(_task(answered_by={"old": HOSTILE})),
    "who decided": lambda: _decided({"action": "accept", "content": {"ok": True}}, by=HOSTILE),
    "answer comment": lambda: _decided(
        {"action": "accept", "content": {"ok": False, "comment": HOSTILE}}
    ),
    "answer decision": lambda: _decided({"action": "accept", "content": {"decision": HOSTILE}}),
    "answer fields": lambda: _decided({"action": "accept", "content": {"n": 1, "x": HOSTILE}}),
    "decision time": lambda: _pages(
        _task(answered_by={"old": "bob"}),
        {"old": Decision({"action": "decline"}, "bob", HOSTILE)},
    ),
    "schema description": lambda: _pages(
        _task(input_requests={"q": _question(schema=_schema(type="string", description=HOSTILE))})
    ),
    "schema property title": lambda: _pages(
        _task(input_requests={"q": _question(schema=_schema(type="string", title=HOSTILE))})
    ),
    "schema property name": lambda: _pages(
        _task(input_requests={"q": _question(schema={"properties": {HOSTILE: {}}})})
    ),
    "schema default": lambda: _pages(
        _task(input_requests={"q": _question(schema=_schema(type="string", default=HOSTILE))})
    ),
    "schema enum value": lambda: _pages(
        _task(input_requests={"q": _question(schema=_schema(enum=["a", HOSTILE]))})
    ),
    "schema enum title": lambda: _pages(
        _task(input_requests={"q": _question(schema=_schema(enum=["a"], enumNames=[HOSTILE]))})
    ),
    "schema oneOf title": lambda: _pages(
        _task(input_requests={"q": _question(schema=_schema(oneOf=[{"const": HOSTILE}]))})
    ),
    "choice button (a rejecting enum's value)": lambda: _pages(
        _task(
            input_requests={
                "q": _question(
                    schema={
                        **_schema(type="string", enum=["reject", HOSTILE]),
                        "required": ["field"],
                    }
                )
            }
        )
    ),
    "step name, status and output": lambda: _pages(
        _task(
            steps=[
                {
                    "name": HOSTILE,
                    "status": HOSTILE,
                    "outputTail": HOSTILE,
                    "startedAt": AT,
                    "exitCode": HOSTILE,
                    "rollback": HOSTILE,
                }
            ]
        )
    ),
    "result text": lambda: _pages(
        _task(
            status="completed",
            input_requests={},
            result={"content": [{"type": "text", "text": HOSTILE}]},
        )
    ),
    "what the task was asked to do": lambda: task_page(
        _task(), NOW, "csrf", frozenset(), ("alice", None), {}, about=HOSTILE
    ),
    "problem with the answer": lambda: task_forms(
        _task(), "csrf", frozenset({"decision"}), HOSTILE
    ),
    "signed-in user": lambda: task_page(_task(), NOW, "csrf", frozenset(), (HOSTILE, None), {}),
    "confirmation's kept answer": lambda: _confirm(comment=HOSTILE),
    "sign-in problem": lambda: login_page("csrf", HOSTILE),
    "error page": lambda: error_page(HOSTILE, HOSTILE),
}


@pytest.mark.parametrize("field", UNTRUSTED)
def test_an_untrusted_value_is_shown_as_text_never_as_markup(field: str) -> None:
    _shown_as_text(UNTRUSTED[field]())


def test_a_tasks_arguments_are_shown_as_text_never_as_markup() -> None:
    _shown_as_text(_listed(_task(), {"pipeline": SHORT}), SHORT)


def test_the_check_sees_markup_that_was_not_escaped() -> None:
    with pytest.raises(AssertionError):
        _shown_as_text(f'<p title="{HOSTILE}">x</p>')
    with pytest.raises(AssertionError):
        _shown_as_text(f"<p>{HOSTILE}</p>")
    with pytest.raises(AssertionError):
        _shown_as_text("<p>nothing hostile at all</p>")


def test_every_template_escapes_what_it_prints() -> None:
    assert ENVIRONMENT.autoescape is True
    assert ENVIRONMENT.from_string("<p title='{{ v }}'>{{ v }}</p>").render(v="'<b>") == (
        "<p title='&#39;&lt;b&gt;'>&#39;&lt;b&gt;</p>"
    )


def test_a_templates_line_breaks_are_a_space_between_words_and_nothing_beside_markup() -> None:
    source = "<p>\n  Signed in\n  as <b>{{ v }}</b>\n  {% if v %}\n    !\n  {% endif %}\n</p>\n"
    assert ENVIRONMENT.from_string(source).render(v="x") == "<p>Signed in as <b>x</b>!</p>"
