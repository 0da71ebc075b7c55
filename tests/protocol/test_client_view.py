"""What one request's client is shown of a task (mcp_server/protocol/core/client_view.py): only the
input requests it declared it can take, `working` when none, `paused` only when declared."""

from __future__ import annotations

from typing import Any

from mcp_server.protocol.core.client_view import STEERING_EXTENSION, as_seen_by
from mcp_server.protocol.core.views import get_task_result
from mcp_server.tasks.snapshots import TaskSnapshot
from workflows.task_workflow import elicitation

FORM = elicitation("Approve?", {"approve": {"type": "boolean"}})
SAMPLE = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
STEERING: dict[str, Any] = {"extensions": {**TASKS["extensions"], STEERING_EXTENSION: {}}}


def waiting(**fields: Any) -> TaskSnapshot:
    values: dict[str, Any] = {
        "task_id": "t-1",
        "tool": "deploy",
        "owner": "o",
        "status": "input_required",
        "status_message": "Waiting for approval",
        "created_at": "2026-01-01T00:00:00.000Z",
        "last_updated_at": "2026-01-01T00:00:00.000Z",
        "ttl_ms": None,
        "poll_interval_ms": 1000,
        "input_requests": {"approve": FORM, "sample": SAMPLE},
        **fields,
    }
    return TaskSnapshot(**values)


def shown(snapshot: TaskSnapshot, declared: dict[str, Any]) -> dict[str, Any]:
    result = get_task_result(snapshot, declared)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def test_a_client_is_shown_only_the_requests_it_declared_it_can_take() -> None:
    assert list(shown(waiting(), {**TASKS, "elicitation": {}})["inputRequests"]) == ["approve"]
    both = shown(waiting(), {**TASKS, "elicitation": {}, "sampling": {}})
    assert list(both["inputRequests"]) == ["approve", "sample"]


def test_a_client_that_can_take_none_sees_working_and_where_it_is_answered() -> None:
    task = shown(waiting(), TASKS)
    assert task["status"] == "working" and "inputRequests" not in task
    assert task["statusMessage"].startswith("Waiting for approval; waiting for an answer")
    assert "mcp-tasks tasks answer t-1" in task["statusMessage"]


def test_a_url_mode_question_needs_url_mode() -> None:
    url = {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "u"}}
    task = waiting(input_requests={"open": url})
    assert shown(task, {**TASKS, "elicitation": {}})["status"] == "working"
    assert shown(task, {**TASKS, "elicitation": {"url": {}}})["status"] == "input_required"


def test_paused_is_shown_only_to_a_client_that_declared_the_steering_extension() -> None:
    paused = waiting(status="working", input_requests={}, paused=True)
    assert shown(paused, STEERING)["status"] == "paused"
    assert shown(paused, TASKS)["status"] == "working"
    closed = waiting(status="completed", input_requests={}, paused=True)
    assert shown(closed, STEERING)["status"] == "completed"


def test_operators_see_the_task_as_it_is() -> None:
    assert as_seen_by(waiting(), {**TASKS, "elicitation": {}, "sampling": {}}) == waiting()
    everything = get_task_result(waiting()).model_dump(by_alias=True, exclude_none=True)
    assert everything["status"] == "input_required" and len(everything["inputRequests"]) == 2
