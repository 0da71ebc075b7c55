"""How the task store starts a task (tasks/store.py): `create`, with its open-task quota
(quota.py, quota_prefetch.py), its idempotency key (idempotency.py), an eager start on this
process's worker, and the 2025-11-25 session's task list (session_tasks.py).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import (
    ArgumentsTooLarge,
    BackendRefused,
    BackendUnavailable,
    TaskError,
    from_rpc_error,
)
from mcp_server.tasks.expiry import Deletions
from mcp_server.tasks.followed import FollowedTasks
from mcp_server.tasks.idempotency import IdempotencyConflict
from mcp_server.tasks.quota import QuotaExceeded, QuotaReservations
from mcp_server.tasks.quota_prefetch import PrefetchedSlots
from mcp_server.tasks.session_tasks import SessionTaskLists
from mcp_server.tasks.snapshot_reads import SnapshotReads
from mcp_server.tasks.snapshots import TaskSnapshot, snapshot_of
from mcp_server.tasks.timeouts import RPC_TIMEOUT
from mcp_server.tasks.ttl import is_expired
from mcp_tasks.contracts.task_state import (
    MEMO_KEY,
    SEARCH_ATTRIBUTE_OWNER,
    SEARCH_ATTRIBUTE_STATUS,
    SEARCH_ATTRIBUTE_TOOL,
    TaskInput,
    TaskMemo,
    TaskState,
)
from mcp_tasks.contracts.task_status import published_status
from workflows.quota import RELEASE_BY_LOCAL_ACTIVITY, RELEASE_LAZILY

log = logging.getLogger("mcp_server.tasks.starts")
INITIAL_STATUS_MESSAGE = "Queued"
# Eager start is asked for while fewer starts than this are in flight from this process.
EAGER_MAX_IN_FLIGHT = 1


def new_task_id() -> str:
    """128 random bits; the prefix lets operators tell MCP tasks apart in Temporal's UI."""
    return f"mcp-task-{secrets.token_hex(16)}"


def initial_search_attributes(task: TaskInput) -> TypedSearchAttributes:
    """The search attributes a task starts with (bench/floor_raw.py starts its floor with them
    too, so the floor's start stays the server's)."""
    keyword = SearchAttributeKey.for_keyword
    return TypedSearchAttributes(
        [
            SearchAttributePair(
                keyword(SEARCH_ATTRIBUTE_STATUS), published_status(open_questions=False)
            ),
            SearchAttributePair(keyword(SEARCH_ATTRIBUTE_TOOL), task.tool),
            SearchAttributePair(keyword(SEARCH_ATTRIBUTE_OWNER), task.owner),
        ]
    )


class TaskStarts(SnapshotReads):
    """`create`: a part of `TemporalTaskStore` (store.py), which sets these attributes."""

    _local_client: Callable[[], Client | None] | None
    _starts_in_flight: int
    _task_queue: str
    _quota: QuotaReservations
    _ahead: PrefetchedSlots
    _sessions: SessionTaskLists
    _terminal: OrderedDict[str, TaskSnapshot]
    _deletions: Deletions
    followed: FollowedTasks

    async def _start(
        self,
        task: TaskInput,
        workflow: str,
        memo: TaskMemo,
        replaces_expired: bool = False,
    ) -> WorkflowHandle[Any, Any]:
        """Start the task's workflow carrying `memo` (its initial state's)."""
        attributes = initial_search_attributes(task)
        # Eager workflow start: on the client of a worker of this process (same task queue),
        # Temporal may answer the start with the task's first workflow task, which that worker
        # runs at once: no matching, no poll round trip. Temporal decides; the SDK asks only
        # while the worker has a free slot, and otherwise it is an ordinary start. Asked only
        # while no other start of this process is in flight (EAGER_MAX_IN_FLIGHT): an eager
        # start's RPC also records the first workflow task, so under concurrent creates it
        # doubled the create's p50 (docs/benchmarks.md), while alone it saves the round trip.
        local = None
        if self._local_client is not None and self._starts_in_flight < EAGER_MAX_IN_FLIGHT:
            local = self._local_client()
        self._starts_in_flight += 1
        try:
            return await (local or self._client).start_workflow(
                workflow,
                task,
                id=task.task_id,
                task_queue=self._task_queue,
                memo={MEMO_KEY: memo},
                search_attributes=attributes,
                execution_timeout=timedelta(milliseconds=task.ttl_ms) if task.ttl_ms else None,
                # A taskId names exactly one execution, ever, but for a keyed call's task that
                # expired (a new run replaces it). A keyed call's retry joins the running task
                # (USE_EXISTING); a closed one is WorkflowAlreadyStartedError.
                id_reuse_policy=(
                    WorkflowIDReusePolicy.ALLOW_DUPLICATE
                    if replaces_expired
                    else WorkflowIDReusePolicy.REJECT_DUPLICATE
                ),
                id_conflict_policy=(
                    WorkflowIDConflictPolicy.USE_EXISTING
                    if task.call_digest
                    else WorkflowIDConflictPolicy.FAIL
                ),
                static_summary=f"MCP tool {task.tool}",
                rpc_timeout=RPC_TIMEOUT,
                request_eager_start=local is not None,
            )
        except RPCError as err:
            if err.status == RPCStatusCode.INVALID_ARGUMENT and "size" in err.message.lower():
                raise ArgumentsTooLarge(err.message) from err
            raise from_rpc_error(err, "start the task") from err
        finally:
            self._starts_in_flight -= 1

    async def create(self, task: TaskInput, workflow: str, quota: int = 0) -> TaskSnapshot:
        """Start the task. With `quota` > 0, first reserve one of the owner's `quota` open-task
        slots (QuotaExceeded when none is free). A start that surely failed gives the slot
        back; one whose outcome is unknown (Temporal unreachable) leaves it to the quota
        workflow's reclaim, which frees it if the task never started.

        A call with an idempotency key (`task.call_digest`, tasks/idempotency.py) whose task
        exists gets that task as it is now, and starts nothing; once that task has expired,
        a new run of the taskId replaces it."""
        expired = False
        if task.call_digest:
            existing, expired = await self._keyed(task)
            if existing is not None:
                return existing
        if quota:
            # A slot reserved ahead comes with its task id (quota_prefetch.py): then nothing
            # but the start itself stands between the request and Temporal.
            ahead = None if task.call_digest else self._ahead.take(task.owner, quota)
            if ahead is None:
                try:
                    answer = await self._quota.reserve(task.owner, task.task_id, quota)
                except QuotaExceeded as full:
                    # The quota is full, but maybe of slots this replica holds ahead (a refill
                    # that landed while this call reserved): such a slot is this caller's.
                    self._ahead.learn(task.owner, quota, full.open_tasks)
                    ahead = self._ahead.take(task.owner, quota)
                    if ahead is None:
                        raise
                else:
                    self._ahead.learn(task.owner, quota, answer.open_tasks)
                    ahead = task.task_id, task.task_id in answer.lazy
            task_id, lazy = ahead
            task = replace(
                task,
                task_id=task_id,
                quota_workflow_id=self._quota.workflow_id(task.owner),
                quota_release=RELEASE_LAZILY if lazy else RELEASE_BY_LOCAL_ACTIVITY,
            )
        state = TaskState.initial(task, INITIAL_STATUS_MESSAGE)
        memo = state.to_memo()
        mark = self.followed.mark()
        try:
            handle = await self._start(task, workflow, memo, replaces_expired=expired)
        except (ArgumentsTooLarge, BackendRefused, WorkflowAlreadyStartedError) as err:
            if quota:  # a closed keyed task released its slot when it closed
                await self._quota.release(task.owner, task.task_id)
            if not isinstance(err, WorkflowAlreadyStartedError):
                raise
        else:
            if not task.call_digest and handle.result_run_id:
                memo_bytes = len(json.dumps(memo, default=str))
                self.followed.seed(snapshot_of(state), handle.result_run_id, memo_bytes, mark)
            if task.session:
                await self._note_in_session(task)
        if task.call_digest:  # started, or joined a twin call's task: compare with it
            existing, _ = await self._keyed(task)
            if existing is None:
                raise BackendUnavailable(
                    "Temporal", "the task of this idempotency key expired meanwhile", 1.0
                )
            return existing
        return snapshot_of(state)  # a copy of its own: the caller may change it

    async def _note_in_session(self, task: TaskInput) -> None:
        """Add a 2025-11-25 session's new task to the session's list, which its GET stream
        follows on any replica. The task has started: a failure here is logged, not raised
        (the task's questions still reach tasks/result and tasks/get)."""
        try:
            await self._sessions.add(task.owner, task.session, task.task_id)
        except TaskError as err:
            log.warning("task %s is not on its session's list: %s", task.task_id, err)

    async def _keyed(self, task: TaskInput) -> tuple[TaskSnapshot | None, bool]:
        """The task a keyed call names, as it is now, or None; and whether it has expired
        (then its run is being deleted, and the key may start a new run). IdempotencyConflict
        when it was created by a call with another tool or other arguments."""
        description = await self._describe(task.task_id)
        if description is None:
            return None, False
        state = TaskState.from_memo(await description.memo_value(MEMO_KEY, None))
        if state is not None and state.owner == task.owner:
            if description.status == WorkflowExecutionStatus.RUNNING:
                snapshot = await self.running_snapshot(task.task_id, description, state)
            else:
                snapshot = await self._closed(task.task_id, description, state)
            if is_expired(snapshot, self._clock()):
                self._terminal.pop(task.task_id, None)
                self._deletions.request(task.task_id, description.run_id)
                return None, True
            if state.call_digest == task.call_digest:
                return snapshot, False
        raise IdempotencyConflict(task.task_id)

    def slots_held_ahead(self, owner: str, quota: int) -> int:
        """How many of `owner`'s open-task slots this replica holds ahead (quota_prefetch.py)."""
        return self._ahead.available(owner, quota)
