"""What can go wrong with a task, in the task layer's own words (no JSON-RPC here).

Rules implemented:
- The task store and task access raise only `TaskError`s; the protocol layer alone turns them
  into JSON-RPC errors (`mcp_server.protocol.frame.errors.from_task_error`).
- A backend that cannot be reached says when to retry (`retry_after_s`); one that answers but
  refuses says what it refused. Both name the backend, so an operator knows where to look.
- A task that ended failed says how in a `TaskFailure`: the code of the protocol error the
  tool raised, or none when the task failed on its own (an exception, its time limit, a
  termination), which the protocol layer renders as an internal error. Awaited by a caller,
  it is raised as `TaskFailed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio.service import RPCError, RPCStatusCode

DEFAULT_RETRY_AFTER_S = 2.0
# Temporal could not be reached or did not answer in time (CANCELLED: an rpc_timeout of ours
# expired, "Timeout expired").
UNREACHABLE = frozenset(
    {RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED}
)


class TaskError(Exception):
    """Base of every error of the task layer."""


class TaskNotFound(TaskError):
    """No such task for this caller: it never existed, has expired, or is someone else's."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"Task not found: {task_id}")
        self.task_id = task_id


class BackendUnavailable(TaskError):
    """The backend cannot be reached (or did not answer in time): worth retrying later."""

    def __init__(
        self, backend: str, detail: str, retry_after_s: float = DEFAULT_RETRY_AFTER_S
    ) -> None:
        super().__init__(f"The task backend ({backend}) is unavailable: {detail}")
        self.backend = backend
        self.detail = detail
        self.retry_after_s = retry_after_s


class NoWorker(BackendUnavailable):
    """Temporal answered, but no worker of the task queue ran what the create needs (the
    open-task reservation): the worker is what is down, not Temporal. Said first, so that
    whoever reads the error (a client, on-call) looks at the workers."""

    def __init__(self, task_queue: str, waited_s: float, retry_after_s: float) -> None:
        detail = (
            f"no worker of task queue {task_queue!r} took the open-task reservation within "
            f"{waited_s:g} s (Temporal answered); no task was started, retry later"
        )
        TaskError.__init__(self, f"No worker is running for the tasks: {detail}")
        self.backend = "worker"
        self.detail = detail
        self.retry_after_s = retry_after_s


class BackendRefused(TaskError):
    """The backend answered, and refused (any error other than unreachable)."""

    def __init__(self, backend: str, action: str, detail: str) -> None:
        super().__init__(f"{backend} refused to {action}: {detail}")
        self.backend = backend
        self.action = action
        self.detail = detail


class ArgumentsTooLarge(TaskError):
    """The tool's arguments exceed what the backend stores with a task."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"The tool arguments are too large to store: {detail}")
        self.detail = detail


@dataclass(frozen=True)
class TaskFailure:
    """How a task failed: `code` is the JSON-RPC code of the protocol error its tool raised
    (with `data`), None when the task failed on its own."""

    message: str
    code: int | None = None
    data: Any = None


class TaskFailed(TaskError):
    """A task awaited by its caller ended failed (`code` as in `TaskFailure`)."""

    def __init__(self, code: int | None, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def from_rpc_error(err: RPCError, action: str) -> TaskError:
    """A failed Temporal call, as the task layer says it: unavailable (retry later) when
    Temporal could not be reached, else refused, naming `action`."""
    if err.status in UNREACHABLE:
        return BackendUnavailable("Temporal", f"{action}: {err.message}")
    return BackendRefused("Temporal", action, err.message)
