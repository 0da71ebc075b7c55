"""The inbox's decision parts without a server: approvals as two buttons and what they send,
confirmation of what ends a task, how a task's end is shown, what was decided, the list's rows
and pages, and timestamps without a timezone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from starlette.datastructures import FormData, UploadFile

from mcp_server.inbox.approval import choice_field, choice_of, decision_labels
from mcp_server.inbox.decided import decision_label, render_decisions
from mcp_server.inbox.forms import FormProblem, NeedsConfirmation, answer_of, render_request
from mcp_server.inbox.list_page import question_of, summary_of
from mcp_server.inbox.outcome import outcome_of
from mcp_server.inbox.pages import task_live
from mcp_server.inbox.paging import page_of
from mcp_server.inbox.timeline import render_timeline
from mcp_server.inbox.times import parse_time
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.task_history import Decision
from mcp_server.tasks.waiting import Waiting

DEPLOY_MESSAGE = (
    'Switch production traffic to 1.3.0?\n\nNext: step 2/2 "switch-traffic", which runs: echo'
)
APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve"},
        "comment": {"type": "string", "title": "Comment", "maxLength": 2000},
    },
    "required": ["approve"],
}
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def _request(schema: dict[str, Any], message: str = DEPLOY_MESSAGE) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


def _snapshot(**changes: Any) -> TaskSnapshot:
    base: dict[str, Any] = {
        "task_id": "t1",
        "owner": "o",
        "status": "completed",
        "status_message": None,
        "created_at": "2026-12-04T11:00:00Z",
        "last_updated_at": "2026-12-04T11:30:00Z",
        "ttl_ms": None,
        "poll_interval_ms": None,
        "input_requests": {},
        "tool": "deploy",
    }
    return TaskSnapshot(**{**base, **changes})


DECISION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "title": "Decision", "enum": ["approve", "reject"]},
        "reason": {"type": "string", "title": "Reason", "maxLength": 2000},
    },
    "required": ["decision"],
}


def test_one_required_boolean_or_rejecting_enum_is_a_choice_and_nothing_else_is() -> None:
    assert choice_field(APPROVAL) == "approve"
    assert choice_field(DECISION) == "decision"
    assert choice_field({**DECISION, "required": ["decision", "reason"]}) == "decision"
    assert choice_field({**APPROVAL, "required": []}) is None
    assert choice_field({**APPROVAL, "required": ["comment"]}) is None
    both: dict[str, Any] = {**APPROVAL["properties"], **DECISION["properties"]}
    two = {"properties": both}
    assert choice_field({**two, "required": ["approve", "decision"]}) is None
    # An enum that rejects nothing is a field: staging or production is no decision.
    env = {"type": "string", "enum": ["staging", "production"]}
    assert choice_field({"properties": {"env": env}, "required": ["env"]}) is None
    assert choice_field(None) is None
    options = choice_of(DECISION, "Rotate the key?")
    assert options is not None
    assert [(o.action, o.label, o.value, o.ends) for o in options.options] == [
        ("choose:approve", "Approve", "approve", False),
        ("choose:reject", "Reject", "reject", True),
    ]


def test_a_decision_enum_is_a_button_per_answer() -> None:
    request = _request(DECISION, "Rotate the key?")
    html = render_request("t1", "k", request, "tok", "It ends.")
    assert 'name="f.decision"' not in html and 'name="f.reason"' in html
    assert (
        'value="choose:reject" class="danger needs-valid" data-confirm="Reject? It ends."' in html
    )
    assert 'value="decline"' not in html
    chosen = FormData([("action", "choose:approve"), ("f.reason", "fine")])
    assert answer_of(request, chosen) == {
        "action": "accept",
        "content": {"decision": "approve", "reason": "fine"},
    }
    with pytest.raises(NeedsConfirmation):
        answer_of(request, FormData([("action", "choose:reject")]))
    with pytest.raises(FormProblem, match="Approve or Reject"):
        answer_of(request, FormData([("action", "choose:maybe")]))


def test_the_buttons_say_what_they_decide() -> None:
    assert decision_labels(DEPLOY_MESSAGE) == (
        "Approve step 2/2 switch-traffic",
        "Reject step 2/2 switch-traffic",
    )
    job = "Run 'job': 3 steps?"
    assert decision_labels(f"{job}\nmore") == (f"Approve: {job}", "Reject")
    assert decision_labels("") == ("Approve", "Reject")


def test_an_approval_is_two_buttons_and_no_checkbox() -> None:
    html = render_request("t1", "k", _request(APPROVAL), "tok", "This rolls back.")
    assert 'type="checkbox"' not in html and 'name="f.approve"' not in html
    assert 'value="approve" class="primary needs-valid">Approve step 2/2 switch-traffic<' in html
    assert 'value="reject" class="danger needs-valid"' in html
    assert 'data-confirm="Reject step 2/2 switch-traffic? This rolls back."' in html
    assert 'name="f.comment"' in html and 'value="accept"' not in html
    # Enter in the comment presses no button: the form's default button is disabled.
    assert html.index('class="no-enter" disabled') < html.index('value="approve"')


def test_approve_and_reject_send_what_the_deploy_reads_as_such() -> None:
    request = _request(APPROVAL)
    approve = FormData([("action", "approve"), ("f.comment", "go")])
    assert answer_of(request, approve) == {
        "action": "accept",
        "content": {"approve": True, "comment": "go"},
    }
    reject = FormData([("action", "reject"), ("confirm", "reject"), ("f.comment", "no")])
    assert answer_of(request, reject) == {
        "action": "accept",
        "content": {"approve": False, "comment": "no"},
    }
    # A checkbox value or the old Accept button decides nothing.
    forged = FormData([("action", "accept"), ("f.approve", "true")])
    with pytest.raises(FormProblem, match="choose Approve step 2/2 switch-traffic or Reject"):
        answer_of(request, forged)


def test_a_rejection_is_taken_only_with_its_confirmation() -> None:
    for confirm in (None, "", "approve", "decline"):
        fields: list[tuple[str, str | UploadFile]] = [("action", "reject")]
        fields += [("confirm", confirm)] if confirm is not None else []
        with pytest.raises(NeedsConfirmation) as raised:
            answer_of(_request(APPROVAL), FormData(fields))
        assert raised.value.action == "reject"


def test_a_task_that_ended_badly_is_never_a_green_success() -> None:
    declined = _snapshot(
        steps=[{"name": "build", "status": "rolled back"}, {"name": "sw", "status": "declined"}],
        result={"isError": True, "content": [{"type": "text", "text": "declined; rolled back"}]},
    )
    assert (outcome_of(declined).label, outcome_of(declined).tone) == (
        "declined and rolled back",
        "bad",
    )
    failed = _snapshot(
        steps=[{"name": "build", "status": "rolled back"}, {"name": "sw", "status": "failed"}],
        result={"isError": True, "content": []},
    )
    assert outcome_of(failed).label == "failed, rolled back" and outcome_of(failed).tone == "bad"
    erred = _snapshot(steps=None, result={"isError": True, "content": []})
    assert outcome_of(erred).tone == "bad"
    rejected = _snapshot(result={"structuredContent": {"decision": "rejected"}, "content": []})
    assert outcome_of(rejected).label == "rejected" and outcome_of(rejected).tone == "bad"
    assert outcome_of(_snapshot(result={"content": []})).tone == "ok"
    assert outcome_of(_snapshot(status="cancelled")).tone == "idle"
    html = task_live(declined, NOW, {})
    assert 'class="pill t-bad"' in html and "declined and rolled back" in html
    assert "t-ok" not in html and "declined; rolled back" in html


def test_a_decision_shows_what_who_when_and_the_comment() -> None:
    decided = {
        "approve-sw": Decision(
            {"action": "accept", "content": {"approve": False, "comment": "<b>not now</b>"}},
            "release-manager",
            "2026-12-04T11:55:00Z",
        )
    }
    html = render_decisions(decided, NOW)
    assert "Rejected" in html and "release-manager" in html
    assert "2026-12-04 11:55:00 UTC (5 min ago)" in html
    assert "&lt;b&gt;not now&lt;/b&gt;" in html and "<b>" not in html
    assert decision_label({"action": "accept", "content": {"approve": True}}) == ("Approved", "ok")
    assert decision_label({"action": "decline"}) == ("Declined", "bad")
    assert decision_label({"action": "accept", "content": {"decision": "reject"}})[1] == "bad"
    assert decision_label({"action": "accept", "content": {"n": 3, "ok": True}})[0] == (
        "Answered: n=3, ok=true"
    )


def _waiting(task_id: str, created_at: str, message: str = "") -> Waiting:
    request = _request(APPROVAL, message) if message else None
    snapshot = _snapshot(
        task_id=task_id, status="input_required", input_requests={"k": request} if request else {}
    )
    return Waiting(task_id, "deploy", created_at, "Waiting", ("k",), True, snapshot)


def test_a_row_shows_its_own_question_and_arguments() -> None:
    assert question_of(_waiting("a", "x", DEPLOY_MESSAGE)) == "Switch production traffic to 1.3.0?"
    assert question_of(_waiting("a", "x")) == "Waiting"
    assert summary_of({"pipeline": "release", "dry": False}) == "pipeline=release, dry=false"


def test_pages_reach_every_waiting_task_whatever_arrives_later() -> None:
    tasks = [_waiting(f"t{i:03}", f"2026-12-04T10:{i // 60:02}:{i % 60:02}Z") for i in range(120)]
    first = page_of(list(reversed(tasks)), None, "v", size=50)
    assert [w.task_id for w in first.tasks] == [f"t{i:03}" for i in range(50)]
    assert first.total == 120 and first.first == 1 and first.next is not None
    # 105 newer tasks arrive: the next page still starts right after the last one shown.
    newer = [_waiting(f"n{i:03}", "2026-12-04T11:00:00Z") for i in range(105)]
    second = page_of(tasks + newer, first.next, "v", size=50)
    assert [w.task_id for w in second.tasks] == [f"t{i:03}" for i in range(50, 100)]
    seen, after = [], None
    while True:
        shown = page_of(tasks + newer, after, "v", size=50)
        seen += [w.task_id for w in shown.tasks]
        if shown.next is None:
            break
        after = shown.next
    assert sorted(seen) == sorted(w.task_id for w in tasks + newer) and len(seen) == 225
    assert page_of(tasks, "garbage", "v").first == 1


def test_a_timestamp_without_a_timezone_is_read_as_utc() -> None:
    assert parse_time("2026-12-04T11:00:00") == datetime(2026, 12, 4, 11, tzinfo=UTC)
    assert parse_time("2026-12-04T11:00:00+01:00") == datetime(2026, 12, 4, 10, tzinfo=UTC)
    assert parse_time(12) is None and parse_time("soon") is None
    steps = [
        {
            "name": "build",
            "status": "succeeded",
            "startedAt": "2026-12-04T11:59:00",
            "endedAt": "2026-12-04T11:59:30Z",
        },
        {"name": "switch", "status": "running", "startedAt": "2026-12-04T11:59:30"},
    ]
    html = render_timeline(steps, NOW)
    assert "30 s" in html and "so far" in html
    assert "ago" in task_live(_snapshot(created_at="2026-12-04T11:00:00", steps=steps), NOW, {})
