"""Task snapshots: what `tasks/get` shows, built from what Temporal reports (no calls to it).

- The state the workflow mirrors into its memo (`TaskState`, read by `TaskState.from_memo`)
  becomes a TaskSnapshot.
- A workflow that did not complete becomes a JSON-RPC error object and an honest
  statusMessage: the tool's own protocol error, a termination, a timeout, or the innermost
  message of any other failure.
- A workflow waiting on an activity gets live progress from Temporal's pending-activity record.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
)
from temporalio.exceptions import ApplicationError, TerminatedError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from mcp_server.tasks.errors import TaskFailure
from mcp_server.tasks.poll_interval import advertised_ms
from mcp_tasks.contracts.task_state import PROTOCOL_ERROR_TYPE, TaskState
from mcp_tasks.contracts.task_status import listed_status
from workflows.child_questions import progress_text

if TYPE_CHECKING:
    from mcp_server.tasks.description import Description


@dataclass(frozen=True)
class TaskSnapshot(TaskState):
    """A task as `tasks/get` shows it, before TTL and owner checks: the task state its
    workflow published (every `TaskState` field, so a new memo field reaches every reader with
    no edit here), with `status` and `statusMessage` as Temporal's record of the execution
    settles them, and what only the server knows."""

    result: dict[str, Any] | None = None
    error: TaskFailure | None = None
    # What the task tells clients (tasks/poll_interval.py); None: `poll_interval_ms`, the tool's
    # base, which the poll limiter always counts against.
    advertised_poll_interval_ms: int | None = None
    # How far its history had come when it was read (sequence.py): a later read never has a
    # smaller one. 0 when not read from the history (a listing, a task just created).
    sequence: int = 0
    # Answered from a read kept by this replica (followed.py), not read from Temporal now: task
    # access learns Temporal's pace from the others only (access.py).
    cached: bool = field(default=False, compare=False)


def progress_label(progress: dict[str, float] | None) -> str | None:
    """How far a task is, in words, from the numbers it reported: `step 2 of 3`, `40%` (a
    fraction of 1), `12` (no total); None when it reported none."""
    if progress is None or "progress" not in progress:
        return None
    return progress_text(progress["progress"], progress.get("total"))


def failure_of(err: BaseException) -> tuple[TaskFailure, str]:
    """How a workflow that did not complete failed, and its statusMessage."""
    cause = err.cause if isinstance(err, WorkflowFailureError) else err
    if isinstance(cause, ApplicationError) and cause.type == PROTOCOL_ERROR_TYPE and cause.details:
        detail = cause.details[0]
        if isinstance(detail, dict) and isinstance(detail.get("code"), int):
            message = str(detail.get("message", cause.message))
            return TaskFailure(
                message, detail["code"], detail.get("data")
            ), f"Task failed: {message}"
    if isinstance(cause, TerminatedError):
        message = f"Task was terminated in Temporal: {cause.message or 'no reason given'}"
    elif isinstance(cause, TemporalTimeoutError):
        message = "Task exceeded its time limit (its ttlMs) and was stopped by Temporal"
    else:
        message = f"Task failed: {_root_message(cause)}"
    return TaskFailure(message), message


def _root_message(err: BaseException | None) -> str:
    """The innermost message of a failure chain ("Activity task failed" says little)."""
    message = ""
    while err is not None:
        message = getattr(err, "message", None) or str(err) or message
        err = getattr(err, "cause", None)
    return message or "unknown failure"


def with_activity_progress(message: str, description: Description, now: datetime) -> str:
    """`step 3/5 "migrate": running` + ` for 72 s (attempt 2)`, from Temporal's own record of
    the activity the workflow is waiting on: live progress without a workflow task."""
    pending = description.raw_description.pending_activities
    if not pending:
        return message
    activity = pending[0]
    if activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED and activity.HasField(
        "last_started_time"
    ):
        started = activity.last_started_time.ToDatetime(tzinfo=UTC)
        message += f" for {max(0, int((now - started).total_seconds()))} s"
    if activity.attempt > 1:
        message += f" (attempt {activity.attempt})"
    return message


def snapshot_of(state: TaskState) -> TaskSnapshot:
    """The snapshot of a published state: each of its fields, the containers copied (a reader
    may change its snapshot, never the state it came from)."""
    return TaskSnapshot(**{item.name: _copied(getattr(state, item.name)) for item in fields(state)})


def _copied(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def listed_snapshot(state: TaskState, execution: WorkflowExecutionStatus | None) -> TaskSnapshot:
    """A task as a listing of the visibility store shows it (tasks/list, `mcp-tasks tasks
    list`): its memo, and how its execution ended when the memo does not say so."""
    snapshot = snapshot_of(state)
    status = listed_status(snapshot.status, execution.name if execution else None)
    if status != snapshot.status:
        snapshot = replace(snapshot, status=status, input_requests={})
    return snapshot


def advertised(snapshot: TaskSnapshot, now: datetime, max_ms: int) -> TaskSnapshot:
    """The snapshot with the pollIntervalMs its quiet time earns (tasks/poll_interval.py)."""
    if snapshot.poll_interval_ms is None:
        return snapshot
    interval = advertised_ms(snapshot.poll_interval_ms, snapshot.last_updated_at, now, max_ms)
    return replace(snapshot, advertised_poll_interval_ms=interval)
