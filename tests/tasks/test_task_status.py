"""The task state machine (mcp_tasks/contracts/task_status.py), table by table, and its docs page
(docs/concepts/state-machine.md) held to it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from temporalio.client import WorkflowExecutionStatus

from mcp_server.tasks.listing import STATUS_QUERIES
from mcp_tasks.contracts.task_status import (
    ANSWERS_PENDING_MESSAGE,
    CANCEL_REQUESTED_MESSAGE,
    CLOSED_BY_EXECUTION,
    INBOX_LABELS,
    OPEN_STATUSES,
    TASK_STATUSES,
    TERMINAL_STATUSES,
    TRANSITIONS,
    TaskStatus,
    can_move,
    cancel_acknowledged,
    closed_status,
    is_terminal,
    listed_status,
    published_status,
    running_status,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "concepts" / "state-machine.md"


def test_every_status_is_open_or_terminal_and_a_terminal_one_never_changes() -> None:
    assert OPEN_STATUSES | TERMINAL_STATUSES == set(TASK_STATUSES)
    assert not OPEN_STATUSES & TERMINAL_STATUSES
    for status in TASK_STATUSES:
        assert is_terminal(status) == (status in TERMINAL_STATUSES)
        assert bool(TRANSITIONS[status]) == (status in OPEN_STATUSES)
        assert not can_move(status, status)
    assert all(not can_move(done, to) for done in TERMINAL_STATUSES for to in TASK_STATUSES)


def test_an_open_task_can_reach_every_terminal_status() -> None:
    for status in OPEN_STATUSES:
        assert all(can_move(status, done) for done in TERMINAL_STATUSES)


@pytest.mark.parametrize(
    ("published", "unanswered", "reads"),
    [
        ("working", False, ("working", None)),
        ("working", True, ("working", None)),
        ("input_required", True, ("input_required", None)),
        ("input_required", False, ("working", ANSWERS_PENDING_MESSAGE)),
    ],
)
def test_a_running_task_reads_as_published_unless_every_question_is_answered(
    published: TaskStatus, unanswered: bool, reads: tuple[TaskStatus, str | None]
) -> None:
    assert running_status(published, unanswered) == reads


def test_the_workflow_publishes_input_required_only_while_a_question_is_open() -> None:
    assert published_status(open_questions=True) == "input_required"
    assert published_status(open_questions=False) == "working"


@pytest.mark.parametrize(
    ("execution", "reads"),
    [
        (WorkflowExecutionStatus.RUNNING, None),
        (WorkflowExecutionStatus.CONTINUED_AS_NEW, None),
        (WorkflowExecutionStatus.COMPLETED, "completed"),
        (WorkflowExecutionStatus.CANCELED, "cancelled"),
        (WorkflowExecutionStatus.FAILED, "failed"),
        (WorkflowExecutionStatus.TERMINATED, "failed"),
        (WorkflowExecutionStatus.TIMED_OUT, "failed"),
    ],
)
def test_a_closed_execution_reads_as_it_ended(
    execution: WorkflowExecutionStatus, reads: TaskStatus | None
) -> None:
    assert closed_status(execution.name) == reads


@pytest.mark.parametrize(
    ("memo", "execution", "reads"),
    [
        ("input_required", None, "input_required"),
        ("input_required", "RUNNING", "input_required"),
        ("input_required", "TERMINATED", "failed"),
        ("working", "CANCELED", "cancelled"),
        ("completed", "COMPLETED", "completed"),
        ("cancelled", "FAILED", "cancelled"),
    ],
)
def test_a_listing_keeps_the_memo_unless_the_execution_closed_without_saying_how(
    memo: TaskStatus, execution: str | None, reads: TaskStatus
) -> None:
    assert listed_status(memo, execution) == reads


@pytest.mark.parametrize(
    ("current", "shown"),
    [
        ("working", ("cancelled", CANCEL_REQUESTED_MESSAGE)),
        ("input_required", ("cancelled", CANCEL_REQUESTED_MESSAGE)),
        ("cancelled", ("cancelled", None)),
        ("completed", None),
        ("failed", None),
    ],
)
def test_a_2025_cancel_shows_the_task_cancelled_at_once_unless_it_already_ended_otherwise(
    current: TaskStatus, shown: tuple[TaskStatus, str | None] | None
) -> None:
    assert cancel_acknowledged(current) == shown


def test_every_status_has_its_listing_query_and_a_closed_one_names_its_executions() -> None:
    assert set(STATUS_QUERIES) == set(TASK_STATUSES)
    for status in OPEN_STATUSES:
        assert STATUS_QUERIES[status].startswith('ExecutionStatus="Running" AND ')
        assert STATUS_QUERIES[status].endswith(f'="{status}"')
    for status in TERMINAL_STATUSES:
        named = set(re.findall(r'"(\w+)"', STATUS_QUERIES[status]))
        executions = {e for e, s in CLOSED_BY_EXECUTION.items() if s == status}
        assert named == {e.title().replace("_", "") for e in executions}  # TIMED_OUT: TimedOut


def test_the_inbox_has_a_label_for_every_status() -> None:
    assert set(INBOX_LABELS) == set(TASK_STATUSES)


def test_the_docs_page_lists_exactly_the_moves_of_the_state_machine() -> None:
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| (.+) \|$", PAGE.read_text(), re.M)
    drawn = {(a, b): why for a, b, why in rows}
    moves = {(a, b): why for a, targets in TRANSITIONS.items() for b, why in targets.items()}
    assert drawn == moves
