"""The numbers a task reports (TaskState.progress, `mcp.report {progress, total}` of a team's
workflow) wherever a person sees how far a task is: the attached call's
`notifications/progress`, `mcp-tasks tasks show` and `tasks list --json`, the inbox's task
page, the task as webhooks and client events show it, and `_meta["mcp-tasks-temporal/progress"]`
of tasks/get. End to end with a team's worker:
tests/sdk/test_exposed_python_example.py."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from jsonschema import Draft202012Validator

from mcp_server.inbox.pages import render_progress, task_live, task_version
from mcp_server.protocol.core.relay import ProgressRelay, progress_mark
from mcp_server.protocol.core.views import get_task_result
from mcp_server.protocol.events.catalog import EVENT_TYPES
from mcp_server.protocol.frame.models import to_wire
from mcp_server.protocol.frame.wire import META_TASK_PROGRESS
from mcp_server.runtime.operator_views import listed_json, page, shown_json
from mcp_server.tasks.listing import ListedTask, TaskDetail
from mcp_server.tasks.snapshots import TaskSnapshot, snapshot_of
from mcp_tasks.contracts.events import EVENT_NAMES
from mcp_tasks.contracts.task_state import TaskInput, TaskState
from tests.wire_schemas import assert_valid
from workflows.webhooks import task_view


def state_with(progress: dict[str, float] | None) -> TaskState:
    task = TaskInput("t1", "deploy", {}, "2026-12-04T10:00:00.000Z", None, 1000, "owner")
    return replace(TaskState.initial(task, "step 2 of 3: migrate"), progress=progress)


def snapshot_with(progress: dict[str, float] | None) -> TaskSnapshot:
    return snapshot_of(state_with(progress))


def test_a_snapshot_carries_the_reported_numbers_and_none_when_there_are_none() -> None:
    assert snapshot_with({"progress": 2, "total": 3}).progress == {"progress": 2, "total": 3}
    assert snapshot_with(None).progress is None


def test_the_attached_call_relays_the_reported_numbers_as_they_are_when_it_sent_none_before() -> (
    None
):
    relay = ProgressRelay()
    assert relay.next(snapshot_with({"progress": 2, "total": 3})) == (2, 3)
    assert relay.next(snapshot_with({"progress": 3, "total": 3})) == (3, 3)
    assert ProgressRelay().next(snapshot_with({"progress": 0.4})) == (0.4, None)


def test_the_attached_call_counts_messages_then_goes_on_from_the_count_with_the_numbers() -> None:
    relay = ProgressRelay()
    assert relay.next(snapshot_with(None)) == (1, None)
    assert relay.next(snapshot_with(None)) == (2, None)
    # Step 1 of 3 after two messages: 3 of 5, then 4 of 5: every notification's progress grows.
    assert relay.next(snapshot_with({"progress": 1, "total": 3})) == (3, 5)
    assert relay.next(snapshot_with({"progress": 2, "total": 3})) == (4, 5)


def test_the_attached_call_sends_nothing_when_the_reported_numbers_go_back() -> None:
    relay = ProgressRelay()
    assert relay.next(snapshot_with({"progress": 2, "total": 3})) == (2, 3)
    assert relay.next(snapshot_with({"progress": 1, "total": 3})) is None
    assert relay.next(snapshot_with({"progress": 3, "total": 3})) == (3, 3)


DETAIL = TaskDetail("deploy", "owner", "run", "ExposedWorkflow", "queue", "RUNNING", 5)


def test_tasks_show_prints_the_step_beside_the_status_message_and_json_has_the_numbers() -> None:
    shown = page(snapshot_with({"progress": 2, "total": 3}), DETAIL)
    assert "  statusMessage:  step 2 of 3: migrate\n  progress:       step 2 of 3\n" in shown
    assert "  progress:       40%" in page(snapshot_with({"progress": 0.4, "total": 1}), DETAIL)
    assert "progress:" not in page(snapshot_with(None), DETAIL)
    operator = json.loads(shown_json(snapshot_with({"progress": 2, "total": 3}), DETAIL))
    assert operator["operator"]["progress"] == {"progress": 2, "total": 3}
    # tasks/get's own result stays exactly what the schema allows: no progress field in it.
    assert "progress" not in operator["task"]


def test_tasks_get_carries_the_numbers_under_this_servers_meta_key_only_when_reported() -> None:
    reported = to_wire(get_task_result(snapshot_with({"progress": 2, "total": 3})))
    assert reported["_meta"] == {META_TASK_PROGRESS: {"progress": 2, "total": 3}}
    assert "progress" not in reported
    assert_valid("tasks/get", {"jsonrpc": "2.0", "id": 1, "result": reported})
    assert "_meta" not in to_wire(get_task_result(snapshot_with(None)))


def test_tasks_list_json_includes_the_numbers_only_when_reported() -> None:
    listed = ListedTask("deploy", snapshot_with({"progress": 1, "total": 4}), "run")
    assert json.loads(listed_json(listed))["progress"] == {"progress": 1, "total": 4}
    assert "progress" not in json.loads(listed_json(replace(listed, snapshot=snapshot_with(None))))


def test_the_inbox_task_page_shows_the_step_with_a_bar_and_refreshes_when_it_moves() -> None:
    shown = render_progress({"progress": 2, "total": 3})
    assert '<progress value="2" max="3" aria-label="step 2 of 3"></progress>' in shown
    assert "<span>step 2 of 3</span>" in shown
    assert "<span>40%</span>" in render_progress({"progress": 0.4, "total": 1})
    # No total: the number alone, no bar that would claim a scale the task never gave.
    assert "<progress" not in render_progress({"progress": 12}) and "12" in render_progress(
        {"progress": 12}
    )
    assert render_progress(None) == ""
    now = datetime(2026, 12, 4, 10, 1, tzinfo=UTC)
    assert "step 2 of 3" in task_live(snapshot_with({"progress": 2, "total": 3}), now, {})
    moved = task_version(snapshot_with({"progress": 3, "total": 3}))
    assert moved != task_version(snapshot_with({"progress": 2, "total": 3}))


def test_webhooks_and_events_carry_the_numbers_only_when_the_task_reported_some() -> None:
    view = task_view(state_with({"progress": 2, "total": 3}))
    assert view["progress"] == {"progress": 2, "total": 3}
    assert view["statusMessage"] == "step 2 of 3: migrate"
    # Every other task's notification is exactly what it always was.
    assert "progress" not in task_view(state_with(None))
    (event_type,) = [e for e in EVENT_TYPES if e.name == EVENT_NAMES["input_required"]]
    validator = Draft202012Validator(event_type.payload_schema)
    assert not list(validator.iter_errors({**view, "sequence": 7}))
    bad = {**view, "sequence": 7, "progress": {"total": 3}}
    assert list(validator.iter_errors(bad))


def test_once_numbers_are_reported_only_their_change_sends_another_notification() -> None:
    step_two = snapshot_with({"progress": 2, "total": 3})
    asking = replace(step_two, status_message="Switch traffic?")
    assert progress_mark(asking) == progress_mark(step_two)
    assert progress_mark(snapshot_with({"progress": 3, "total": 3})) != progress_mark(step_two)
    # Without numbers, each new message is one.
    plain = snapshot_with(None)
    assert progress_mark(replace(plain, status_message="other")) != progress_mark(plain)
