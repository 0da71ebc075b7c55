"""The task's state machine: its five statuses, the moves between them, and how every part of
the system derives a task's status. docs/concepts/state-machine.md draws it; this module is the
one place that says it, and tests/tasks/test_task_status.py holds both to each other.

Statuses (wire §2.2, the same five names at 2025-11-25): `working` and `input_required` are
open; `completed`, `failed` and `cancelled` are terminal, and nothing leaves them.

Who decides a task's status:
- the workflow (workflows/task_workflow.py) publishes `working` or `input_required` in its memo
  while it runs (`published_status`: open questions or not), and `completed` or `cancelled`
  when it ends; a failure is Temporal's to record (the workflow raised, was terminated or
  timed out);
- the task store (mcp_server/tasks/snapshot_reads.py) reads a running task as published, but
  for a task whose questions are all answered and not yet taken in by the workflow, which
  reads `working` (`running_status`); a closed task reads as its execution ended
  (`closed_status`), whatever its memo said last;
- a 2025-11-25 `tasks/cancel` answers at once as the cancellation will end, before the task
  has taken it in (`cancel_acknowledged`);
- a listing (tasks/list, the operator CLI) reads the memo, and how the execution ended when it
  closed without the memo saying so (`listed_status`).

How each view shows it: the 2026-07-28 wire (`DetailedTask.status`), the 2025-11-25 wire
(`Task.status`), the follow-up tool `task_status` and the operator CLI show the status as is;
the approval inbox shows `INBOX_LABELS` (its outcome line adds how a completed task was
decided).
"""

from __future__ import annotations

from typing import Literal, get_args

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TASK_STATUSES: tuple[TaskStatus, ...] = get_args(TaskStatus)
OPEN_STATUSES: frozenset[TaskStatus] = frozenset({"working", "input_required"})
TERMINAL_STATUSES: frozenset[TaskStatus] = frozenset({"completed", "failed", "cancelled"})

# Every move a reader can see, and why. A reader may miss intermediate statuses (it reads a
# snapshot, not every change), so `input_required` -> `completed` is possible: the answer was
# taken in and the task finished within one workflow task.
TRANSITIONS: dict[TaskStatus, dict[TaskStatus, str]] = {
    "working": {
        "input_required": "the task asks a question (ask, ask_all)",
        "completed": "the task returns its result",
        "failed": "the task raises, is terminated, or outlives its TTL",
        "cancelled": "tasks/cancel (or task_cancel) is honoured",
    },
    "input_required": {
        "working": "every open question is answered, or a question times out and is withdrawn",
        "completed": "the last answer is taken in and the task finishes at once",
        "failed": "the task raises, is terminated, or outlives its TTL while it waits",
        "cancelled": "tasks/cancel is honoured while it waits",
    },
    "completed": {},
    "failed": {},
    "cancelled": {},
}
# How a closed execution reads, by `WorkflowExecutionStatus` name: the execution's end wins
# over the memo's last word.
CLOSED_BY_EXECUTION: dict[str, TaskStatus] = {
    "COMPLETED": "completed",
    "CANCELED": "cancelled",
    "FAILED": "failed",
    "TERMINATED": "failed",
    "TIMED_OUT": "failed",
}
# What the message of a running task whose questions are all answered says.
ANSWERS_PENDING_MESSAGE = "Processing the answers"
# What the message of a task says once a cancellation is asked for, until the task ends.
CANCEL_REQUESTED_MESSAGE = "Cancellation requested"
# What a cancelled task says when its workflow never said anything of its own.
CANCELLED_MESSAGE = "Cancelled"
# The approval inbox's label of each status.
INBOX_LABELS: dict[TaskStatus, str] = {
    "working": "working",
    "input_required": "input required",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
}


def is_terminal(status: str) -> bool:
    return status in TERMINAL_STATUSES


def can_move(current: TaskStatus, to: TaskStatus) -> bool:
    """Whether a task `current` may still become `to` (a terminal status never changes)."""
    return to in TRANSITIONS[current]


def published_status(open_questions: bool) -> TaskStatus:
    """What a running workflow publishes: `input_required` while a question is open."""
    return "input_required" if open_questions else "working"


def running_status(published: TaskStatus, unanswered: bool) -> tuple[TaskStatus, str | None]:
    """How the store reads a running task that published `published`: `working` (with
    `ANSWERS_PENDING_MESSAGE`) when it waits for input but every question is answered."""
    if published == "input_required" and not unanswered:
        return "working", ANSWERS_PENDING_MESSAGE
    return published, None


def closed_status(execution: str) -> TaskStatus | None:
    """How a closed execution (a `WorkflowExecutionStatus` name) reads; None while running."""
    return CLOSED_BY_EXECUTION.get(execution)


def cancel_acknowledged(current: TaskStatus) -> tuple[TaskStatus, str | None] | None:
    """How a 2025-11-25 `tasks/cancel` shows a task read as `current` when the cancellation was
    asked for: `cancelled` at once (with `CANCEL_REQUESTED_MESSAGE` while the task has not ended
    yet; None: its message stands), as that revision's result promises. None when the task can
    no longer become `cancelled` (it completed or failed): the request is refused."""
    if current == "cancelled":
        return current, None
    if not can_move(current, "cancelled"):
        return None
    return "cancelled", CANCEL_REQUESTED_MESSAGE


def listed_status(memo: TaskStatus, execution: str | None) -> TaskStatus:
    """How a listing reads a task: its memo's status, unless the execution closed without the
    memo saying how (`completed` and `cancelled` are the workflow's own last word)."""
    closed = closed_status(execution) if execution else None
    if closed is None or memo in ("completed", "cancelled"):
        return memo
    return closed
