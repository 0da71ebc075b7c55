"""The inbox's pure parts: the session cookie, CSRF tokens, forms from requestedSchema (and
back), the step timeline, the visibility query."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
from starlette.datastructures import FormData

from mcp_server.inbox.csrf import CsrfTokens
from mcp_server.inbox.forms import (
    FormProblem,
    NeedsConfirmation,
    answer_of,
    heading_of,
    render_fields,
    render_request,
)
from mcp_server.inbox.pages import login_page, task_live, task_page
from mcp_server.inbox.session import InboxSession, SessionCookies, cookie_header
from mcp_server.inbox.timeline import render_timeline
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.waiting import inbox_query
from mcp_tasks.identity import Principal

SECRET = b"k" * 32
ALICE = Principal("alice", frozenset({"deploy"}))


def test_a_session_cookie_round_trips_and_resists_tampering() -> None:
    codec = SessionCookies(SECRET, 3600)
    session = codec.new(ALICE)
    cookie = codec.encode(session)
    assert codec.decode(cookie) == session
    signed, signature = cookie.rsplit(".", 1)
    assert codec.decode(f"{signed}x.{signature}") is None
    assert codec.decode(f"{signed}.{signature[:-2]}AA") is None
    assert SessionCookies(b"other" * 8, 3600).decode(cookie) is None
    assert codec.decode("garbage") is None and codec.decode(None) is None
    expired = InboxSession("id", int(time.time()) - 1, ALICE)
    assert codec.decode(codec.encode(expired)) is None
    assert codec.new(None).principal is None


def test_cookie_attributes() -> None:
    plain = cookie_header("v", 60, secure=False)
    assert plain == "mcp_inbox=v; Path=/inbox; Max-Age=60; HttpOnly; SameSite=Strict"
    assert cookie_header("v", 60, secure=True).endswith("; Secure")
    assert "Max-Age=0" in cookie_header("", -5, secure=False)


def test_csrf_tokens_are_bound_to_their_session() -> None:
    codec, csrf = SessionCookies(SECRET, 3600), CsrfTokens(SECRET)
    one, two = codec.new(ALICE), codec.new(ALICE)
    assert csrf.valid(one, csrf.token(one))
    assert not csrf.valid(two, csrf.token(one))
    assert not csrf.valid(None, csrf.token(one))
    assert not csrf.valid(one, "") and not csrf.valid(one, None)
    assert not CsrfTokens(b"other" * 8).valid(one, csrf.token(one))


HOSTILE = '"><script>x()</script>'


def test_every_field_type_is_rendered_and_escaped() -> None:
    html = render_fields(
        {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "title": HOSTILE,
                    "description": HOSTILE,
                    "minLength": 2,
                    "maxLength": 9,
                    "default": HOSTILE,
                },
                "mail": {"type": "string", "format": "email"},
                "site": {"type": "string", "format": "uri"},
                "day": {"type": "string", "format": "date"},
                "env": {"type": "string", "enum": ["a", HOSTILE], "enumNames": ["A", "Bad"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]},
                "n": {"type": "integer", "minimum": 1, "maximum": 5},
                "x": {"type": "number", "minimum": 0.5},
                "ok": {"type": "boolean", "default": True},
                "tags": {"type": "array", "items": {"anyOf": [{"const": "t", "title": "T"}]}},
            },
            "required": ["name", "n"],
        }
    )
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'minlength="2" maxlength="9"' in html and 'name="f.name"' in html
    for needle in (
        'type="email"',
        'type="url"',
        'type="date"',
        '<option value="s">Small',
        '<option value="a">A',
        'step="1" min="1" max="5"',
        'step="any" min="0.5"',
        'type="checkbox" name="f.ok" id="f.ok" value="true" checked',
        "multiple",
        '<option value="t">T',
    ):
        assert needle in html, needle
    assert html.count(" required") == 2


def _request(schema: dict[str, Any], method: str = "elicitation/create") -> dict[str, Any]:
    return {"method": method, "params": {"message": "m", "requestedSchema": schema}}


SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "text": {"type": "string"},
    },
}


def test_a_posted_form_becomes_typed_content() -> None:
    form = FormData(
        [
            ("action", "accept"),
            ("f.n", "3"),
            ("f.x", "2.5"),
            ("f.tags", "a"),
            ("f.tags", "b"),
            ("f.text", ""),
        ]
    )
    assert answer_of(_request(SCHEMA), form) == {
        "action": "accept",
        "content": {"n": 3, "x": 2.5, "ok": False, "tags": ["a", "b"]},
    }
    declined = FormData([("action", "decline"), ("confirm", "decline")])
    assert answer_of(_request(SCHEMA), declined) == {"action": "decline"}
    with pytest.raises(FormProblem, match="n: must be a number"):
        answer_of(_request(SCHEMA), FormData([("action", "accept"), ("f.n", "three")]))
    with pytest.raises(FormProblem, match="whole number"):
        answer_of(_request(SCHEMA), FormData([("action", "accept"), ("f.n", "1.5")]))
    with pytest.raises(FormProblem, match="Send answer or Decline"):
        answer_of(_request(SCHEMA), FormData([("action", "maybe")]))
    with pytest.raises(NeedsConfirmation):
        answer_of(_request(SCHEMA), FormData([("action", "decline")]))


def test_a_request_that_is_not_a_form_is_described() -> None:
    html = render_request("t1", "k", _request({}, method="sampling/createMessage"), "tok", "")
    assert "only be answered by an MCP client" in html and "<form" not in html
    html = render_request("t1", "k", _request(SCHEMA), "tok", "")
    assert 'action="/inbox/tasks/t1/answer"' in html and 'value="tok"' in html


def test_the_timeline_draws_each_step_by_status() -> None:
    now = datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    html = render_timeline(
        [
            {
                "name": "build",
                "status": "succeeded",
                "startedAt": "2026-01-01T00:00:00.000Z",
                "endedAt": "2026-01-01T00:00:30.000Z",
                "exitCode": 0,
                "outputTail": "<b>built</b>",
            },
            {
                "name": "migrate",
                "status": "rolled back",
                "startedAt": "2026-01-01T00:00:30.000Z",
                "endedAt": "2026-01-01T00:01:00.000Z",
                "exitCode": 1,
                "rollback": {"exitCode": 0},
            },
            {"name": "switch", "status": "waiting"},
            {"name": "later", "status": "skipped"},
        ],
        now,
    )
    assert html.count('<li class="step') == 4
    assert 'class="track s-succeeded" x="0.00" y="0" width="50.00"' in html
    assert 'class="track s-rolled-back" x="50.00"' in html
    assert 'class="track s-waiting" x="96.00"' in html
    assert "30 s" in html and "exit 1" in html and "rollback: exit 0" in html
    assert "&lt;b&gt;built&lt;/b&gt;" in html and "<b>" not in html
    assert "publishes no steps" in render_timeline(None, now)


def test_the_inbox_query() -> None:
    base = 'ExecutionStatus="Running" AND McpStatus="input_required"'
    assert inbox_query("d1", [], every_approver=False) == f'{base} AND (McpOwner="d1")'
    assert inbox_query("d1", ["scope:r", 'principal:"x'], every_approver=False) == (
        f'{base} AND (McpOwner="d1" OR McpApprovers IN ("principal:\\"x", "scope:r"))'
    )
    assert inbox_query("d1", ["scope:r"], every_approver=True) == base


def _snapshot(steps: list[dict[str, Any]] | None) -> TaskSnapshot:
    now = "2026-12-06T12:00:00Z"
    question = {
        "method": "elicitation/create",
        "params": {
            "message": "Ship it?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        },
    }
    return TaskSnapshot(
        task_id="t1",
        tool="request_approval",
        owner="o",
        created_at=now,
        last_updated_at=now,
        ttl_ms=None,
        poll_interval_ms=None,
        status="input_required",
        input_requests={"decision": question},
        steps=steps,
    )


def test_a_request_is_headed_by_its_title_or_its_key_in_words() -> None:
    assert heading_of("approve-switch-traffic", _request(SCHEMA)) == "Approve switch traffic"
    assert heading_of("decision", _request(SCHEMA)) == "Decision"
    assert heading_of("k", _request({**SCHEMA, "title": "Release 1.2"})) == "Release 1.2"
    html = render_request("t1", "approve-switch-traffic", _request(SCHEMA), "tok", "")
    assert "<h3>Approve switch traffic</h3>" in html and 'data-key="approve-switch-traffic"' in html


def test_a_task_without_steps_shows_no_steps_card() -> None:
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    assert "<h2>Steps</h2>" not in task_live(_snapshot(None), now, {})
    step = {"name": "build", "status": "completed"}
    assert "<h2>Steps</h2>" in task_live(_snapshot([step]), now, {})


def test_the_sign_in_page_speaks_of_the_token_not_of_server_flags() -> None:
    html = login_page("csrf")
    assert "--auth" not in html and "token you were given" in html


def test_a_task_page_says_what_the_task_was_asked_to_do_when_known() -> None:
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    who = ("alice", None)
    about = "pipeline=release: Build, then switch traffic"
    page = task_page(_snapshot(None), now, "csrf", frozenset(), who, {}, about=about)
    assert '<p class="about">pipeline=release: Build, then switch traffic</p>' in page
    assert 'class="about"' not in task_page(_snapshot(None), now, "csrf", frozenset(), who, {})
