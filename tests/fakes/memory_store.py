"""An in-memory `TaskStore` (mcp_server/tasks/store.py), for the in-process protocol tier.

It behaves as `TemporalTaskStore` does for what the protocol layer relies on, and the contract
suite (tests/contract/test_task_store_contract.py) runs the same tests on both:
- create: a taskId names one task; an idempotency key (`call_digest`) returns its task as it is
  now (IdempotencyConflict for another call, a new task once it expired); `quota` > 0 caps the
  owner's open tasks (QuotaExceeded).
- get: None for a missing task or someone else's (unless `identity` approves it); a closed
  task's ttlMs grows as Temporal's does, and an expired task is read once more, then deleted.
- submit_input answers only outstanding keys; cancel of a closed or missing task is a no-op.
- steer: a pause or resume shows at once (`paused`), as TaskWorkflow's default does; steer
  messages are kept in order (`steered`); a closed or missing task ignores them.
- wait_for_events: how many changes came after `cursor`, None cursor once closed.
- session_tasks: the tasks a session created after `cursor`, waiting for one when none came.
Tasks run by the scripts of task_runner.py; time is the injected `clock`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from mcp_server.tasks.approvers import may_read
from mcp_server.tasks.errors import TaskFailure
from mcp_server.tasks.idempotency import IdempotencyConflict
from mcp_server.tasks.not_found import NotFoundDeadline
from mcp_server.tasks.poll_interval import DEFAULT_MAX_MS
from mcp_server.tasks.quota import QuotaExceeded
from mcp_server.tasks.snapshots import TaskSnapshot, advertised, snapshot_of
from mcp_server.tasks.task_history import Decision
from mcp_server.tasks.ttl import is_expired, ttl_after_close
from mcp_tasks.contracts.task_state import (
    AuditStamp,
    SubmitInput,
    TaskInput,
    TaskState,
    iso_timestamp,
)
from mcp_tasks.contracts.task_status import CANCELLED_MESSAGE, TaskStatus
from mcp_tasks.contracts.tool_messages import InputRequest, InputResponse
from mcp_tasks.identity import Identity
from tests.fakes.task_runner import SCRIPTS, Script, ScriptFailed
from workflows.steering import PAUSE_SIGNAL, SteerInput

INITIAL_STATUS_MESSAGE = "Queued"
LONG_POLL_S = 20.0


@dataclass
class _Task:
    task: TaskInput
    state: TaskState
    outstanding: dict[str, InputRequest] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    closed_at: str | None = None
    result: dict[str, Any] | None = None
    error: TaskFailure | None = None
    events: int = 1
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    job: asyncio.Task[None] | None = None
    steered: list[str] = field(default_factory=list)
    # The first answer to each key, who gave it and when (what Temporal's history keeps).
    decided: dict[str, Decision] = field(default_factory=dict)


class _Run:
    """A script's view of its task (task_runner.Run)."""

    def __init__(self, store: MemoryTaskStore, entry: _Task) -> None:
        self._store = store
        self._entry = entry

    def report(self, message: str) -> None:
        self._store._change(self._entry, status_message=message)

    async def ask_all(
        self,
        requests: dict[str, InputRequest],
        status_message: str,
        approvers: list[str] | None = None,
    ) -> dict[str, InputResponse]:
        entry = self._entry
        previous = entry.state.status_message
        entry.outstanding.update(requests)
        named = dict(entry.state.approvers)
        if approvers:  # kept for the task's whole life, as TaskWorkflow keeps them
            named.update({key: list(approvers) for key in requests})
        self._store._change(entry, status_message=status_message, approvers=named)
        while not all(key in entry.answers for key in requests):
            entry.changed.clear()
            await entry.changed.wait()
        answers = {key: InputResponse.read(entry.answers.pop(key)) for key in requests}
        self._store._change(entry, status_message=previous or "Working")
        return answers


class MemoryTaskStore:
    def __init__(
        self,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        scripts: dict[str, Script] | None = None,
        poll_interval_max_ms: int = DEFAULT_MAX_MS,
    ) -> None:
        self._clock = clock
        self._scripts = SCRIPTS if scripts is None else scripts
        self._poll_interval_max_ms = poll_interval_max_ms
        self._tasks: dict[str, _Task] = {}
        self.not_found = NotFoundDeadline()
        self._sessions: dict[str, list[str]] = {}
        self._session_changed: dict[str, asyncio.Event] = {}

    def entries(self) -> list[_Task]:
        """Every task it holds, oldest first (what memory_inbox.py reads)."""
        return list(self._tasks.values())

    def entry(self, task_id: str) -> _Task | None:
        return self._tasks.get(task_id)

    async def close(self) -> None:
        """Stop every task still running (the end of a test)."""
        jobs = [entry.job for entry in self._tasks.values() if entry.job is not None]
        for job in jobs:
            job.cancel()
        for job in jobs:
            with contextlib.suppress(asyncio.CancelledError):
                await job

    # ----- create ------------------------------------------------------------------------

    async def create(self, task: TaskInput, workflow: str, quota: int = 0) -> TaskSnapshot:
        if task.call_digest:
            existing = self._tasks.get(task.task_id)
            if existing is not None:
                snapshot = self._snapshot(existing)
                if existing.task.owner != task.owner:
                    raise IdempotencyConflict(task.task_id)
                if not is_expired(snapshot, self._clock()):
                    if existing.task.call_digest != task.call_digest:
                        raise IdempotencyConflict(task.task_id)
                    return self._advertise(snapshot)
                del self._tasks[task.task_id]
        elif task.task_id in self._tasks:
            raise IdempotencyConflict(task.task_id)
        if quota:
            open_tasks = sum(
                1 for t in self._tasks.values() if t.task.owner == task.owner and not t.closed_at
            )
            if open_tasks >= quota:
                raise QuotaExceeded(open_tasks, quota)
        entry = _Task(task, TaskState.initial(task, INITIAL_STATUS_MESSAGE))
        self._tasks[task.task_id] = entry
        if task.session:  # the session's task list (workflows/session_tasks.py)
            self._sessions.setdefault(task.session, []).append(task.task_id)
            self._session_changed.setdefault(task.session, asyncio.Event()).set()
        script = self._scripts.get(workflow)
        if script is not None:
            entry.job = asyncio.get_running_loop().create_task(self._run(entry, script))
        return snapshot_of(entry.state)

    async def _run(self, entry: _Task, script: Script) -> None:
        try:
            result = await script(entry.task, _Run(self, entry))
        except asyncio.CancelledError:
            self._close(entry, "cancelled", CANCELLED_MESSAGE)
            raise
        except ScriptFailed as failed:
            entry.error = failed.error
            self._close(entry, "failed", f"Task failed: {failed.error.message}")
            return
        entry.result = result.wire()
        summary = result.first_text.strip().split("\n", 1)[0]
        self._close(entry, "completed", f"Completed: {summary}" if summary else "Completed")

    # ----- what a running task changes -----------------------------------------------------

    def _change(self, entry: _Task, **changes: Any) -> None:
        status: TaskStatus = "input_required" if entry.outstanding else "working"
        entry.state = replace(
            entry.state,
            status=status,
            input_requests=dict(entry.outstanding),
            last_updated_at=iso_timestamp(self._clock()),
            **changes,
        )
        self._touch(entry)

    def _close(self, entry: _Task, status: TaskStatus, message: str) -> None:
        entry.outstanding.clear()
        entry.closed_at = iso_timestamp(self._clock())
        entry.state = replace(
            entry.state,
            status=status,
            status_message=message,
            input_requests={},
            last_updated_at=entry.closed_at,
        )
        self._touch(entry)

    @staticmethod
    def _touch(entry: _Task) -> None:
        entry.events += 1
        entry.changed.set()

    # ----- get -----------------------------------------------------------------------------

    def _snapshot(self, entry: _Task) -> TaskSnapshot:
        # The events recorded so far stand for the history length (tasks/sequence.py).
        snapshot = replace(snapshot_of(entry.state), sequence=entry.events)
        if entry.closed_at is None:
            return snapshot
        ttl = ttl_after_close(snapshot.created_at, entry.closed_at, snapshot.ttl_ms)
        return replace(snapshot, ttl_ms=ttl, result=entry.result, error=entry.error)

    def _advertise(self, snapshot: TaskSnapshot) -> TaskSnapshot:
        return advertised(snapshot, self._clock(), self._poll_interval_max_ms)

    async def get(
        self, task_id: str, owner: str | None = None, identity: Identity | None = None
    ) -> TaskSnapshot | None:
        entry = self._tasks.get(task_id)
        if entry is None:
            return None
        if owner is not None and not may_read(
            entry.state.owner, entry.state.approvers, owner, identity
        ):
            return None
        snapshot = self._snapshot(entry)
        if is_expired(snapshot, self._clock()):
            self._forget(entry)  # Temporal deletes it too: the next read finds nothing
        return self._advertise(snapshot)

    def _forget(self, entry: _Task) -> None:
        del self._tasks[entry.task.task_id]
        if entry.job is not None:
            entry.job.cancel()

    async def wait_for_events(self, task_id: str, cursor: bytes) -> tuple[int, bytes | None] | None:
        entry = self._tasks.get(task_id)
        if entry is None:
            return None
        seen = int(cursor.decode("ascii")) if cursor else 0
        if entry.events <= seen and entry.closed_at is None:
            entry.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(entry.changed.wait(), LONG_POLL_S)
        if entry.events <= seen:
            return 0, cursor
        after = None if entry.closed_at else str(entry.events).encode("ascii")
        return entry.events - seen, after

    # ----- listing -------------------------------------------------------------------------

    async def list_owned(
        self, owner: str, page_size: int, cursor: str | None
    ) -> tuple[list[TaskSnapshot], str | None]:
        try:
            start = int(base64.urlsafe_b64decode(cursor.encode("ascii"))) if cursor else 0
        except (ValueError, UnicodeError) as err:
            raise ValueError("malformed cursor") from err
        owned = [e for e in reversed(self._tasks.values()) if e.task.owner == owner]
        page = owned[start : start + page_size]
        snapshots = [
            self._advertise(replace(self._snapshot(e), result=None, error=None)) for e in page
        ]
        end = start + len(page)
        more = (
            base64.urlsafe_b64encode(str(end).encode()).decode("ascii")
            if end < len(owned)
            else None
        )
        return snapshots, more

    async def session_tasks(self, session: str, cursor: bytes) -> tuple[list[str], bytes]:
        seen = int(cursor.decode("ascii")) if cursor else 0
        listed = self._sessions.setdefault(session, [])
        if len(listed) <= seen:
            changed = self._session_changed.setdefault(session, asyncio.Event())
            changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), LONG_POLL_S)
        return listed[seen:], str(len(listed)).encode("ascii")

    # ----- update and cancel ---------------------------------------------------------------

    async def submit_input(self, task_id: str, update: SubmitInput) -> None:
        entry = self._tasks.get(task_id)
        if entry is None or entry.closed_at is not None:
            return  # closed meanwhile: nothing to answer
        accepted = [key for key in update.responses if key in entry.outstanding]
        for key in accepted:
            entry.answers[key] = update.responses[key]
            del entry.outstanding[key]
            answer, at = update.responses[key], iso_timestamp(self._clock())
            if isinstance(answer, dict):
                entry.decided[key] = Decision(answer, update.by or "someone", at)
            if update.by:
                by = {**entry.state.answered_by, key: update.by}
                entry.state = replace(entry.state, answered_by=by)
        if accepted:
            self._change(entry)

    async def steer(self, task_id: str, signal: str, payload: SteerInput | AuditStamp) -> None:
        entry = self._tasks.get(task_id)
        if entry is None or entry.closed_at is not None:
            return  # closed meanwhile: nothing to steer
        if isinstance(payload, SteerInput):
            entry.steered.append(payload.message)
        elif (signal == PAUSE_SIGNAL) != entry.state.paused:
            self._change(entry, paused=signal == PAUSE_SIGNAL)

    async def cancel(self, task_id: str, stamp: AuditStamp) -> None:
        del stamp  # the audit record lives in Temporal's history; nothing reads it back here
        entry = self._tasks.get(task_id)
        if entry is None or entry.closed_at is not None:
            return  # closed meanwhile: the ack stands
        if entry.job is not None:
            entry.job.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await entry.job
        if entry.closed_at is None:  # no script, or cancelled before it first ran
            self._close(entry, "cancelled", CANCELLED_MESSAGE)
