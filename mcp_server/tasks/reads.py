"""The task store's `get` (tasks/store.py): a closed task from this replica's cache of terminal
snapshots, a running one this replica follows without a call while it stays the same
(followed.py), anything else read from Temporal (snapshot_reads.py). An expired task is
deleted as it is read.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse
from temporalio.client import WorkflowExecutionStatus

from mcp_server.tasks.approvers import may_read
from mcp_server.tasks.expiry import Deletions
from mcp_server.tasks.followed import (
    REVALIDATE_WAIT_S,
    TASK_READS,
    FollowedTasks,
    Stillness,
)
from mcp_server.tasks.snapshot_reads import SnapshotReads
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.ttl import is_expired
from mcp_tasks.contracts.task_state import MEMO_KEY, TaskState
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES
from mcp_tasks.identity import Identity

_TERMINAL_CACHE_SIZE = 4096


def stillness_of(raw: DescribeWorkflowExecutionResponse) -> Stillness:
    """What Temporal was doing for a running task, by its `describe()` (followed.py's rules)."""
    if raw.pending_activities:
        return "busy"
    return "awaiting_worker" if raw.HasField("pending_workflow_task") else "quiet"


class TaskReads(SnapshotReads):
    """`get` and its caches, a part of `TemporalTaskStore` (store.py), which sets these."""

    _terminal: OrderedDict[str, TaskSnapshot]
    _deletions: Deletions
    followed: FollowedTasks

    async def get(
        self, task_id: str, owner: str | None = None, identity: Identity | None = None
    ) -> TaskSnapshot | None:
        """The task, or None when it does not exist, is not an MCP task, or (given `owner`) is
        someone else's and does not name `identity` as an approver (approvers.py); its
        pollIntervalMs grown with its quiet time."""
        snapshot = await self._read(task_id, owner, identity)
        return None if snapshot is None else self._advertise(snapshot)

    async def _read(
        self, task_id: str, owner: str | None, identity: Identity | None
    ) -> TaskSnapshot | None:
        cached = self._terminal.get(task_id)
        if cached is not None and (
            owner is None or may_read(cached.owner, cached.approvers, owner, identity)
        ):
            if not is_expired(cached, self._clock()):
                TASK_READS.labels("terminal").inc()
                return cached  # anyone else takes the same describe() as for a missing task
            # Expired: read afresh, to delete it (or find the new run of its idempotency key).
            self._terminal.pop(task_id, None)
        followed = self.followed.answer(task_id)
        if followed is not None and (
            owner is None or may_read(followed.owner, followed.approvers, owner, identity)
        ):
            TASK_READS.labels("followed").inc()
            return followed  # as for the terminal cache: anyone else reads Temporal
        stale = self.followed.stale_copy(task_id)
        if stale is not None and (
            owner is None or may_read(stale.owner, stale.approvers, owner, identity)
        ):
            return await self._revalidate(task_id, stale, owner, identity)
        return await self._read_through(task_id, owner, identity)

    async def _revalidate(
        self, task_id: str, stale: TaskSnapshot, owner: str | None, identity: Identity | None
    ) -> TaskSnapshot | None:
        """A followed task that changed since its copy was read (followed.py, stale while
        revalidating): the read of Temporal in flight (or a new one, shared), waited for up to
        REVALIDATE_WAIT_S, else the copy."""
        refresh = self.followed.refreshing(task_id, lambda: self._read_through(task_id, None, None))
        try:
            async with asyncio.timeout(REVALIDATE_WAIT_S):
                snapshot = await asyncio.shield(refresh)
        except TimeoutError:
            TASK_READS.labels("stale").inc()
            return stale
        if snapshot is None or (
            owner is not None and not may_read(snapshot.owner, snapshot.approvers, owner, identity)
        ):
            return None
        return snapshot

    async def _read_through(
        self, task_id: str, owner: str | None, identity: Identity | None
    ) -> TaskSnapshot | None:
        """The task read from Temporal, waited for (and kept, when it is followed)."""
        mark = self.followed.mark()
        TASK_READS.labels("temporal").inc()
        description = await self._describe(task_id)
        if description is None:
            return None
        state = TaskState.from_memo(await description.memo_value(MEMO_KEY, None))
        if state is None or (
            owner is not None and not may_read(state.owner, state.approvers, owner, identity)
        ):
            return None  # not an MCP task (another workflow of the namespace), or not theirs
        if description.status == WorkflowExecutionStatus.RUNNING:
            snapshot = await self.running_snapshot(task_id, description, state)
            if snapshot.status in TERMINAL_STATUSES:
                return snapshot  # it ended between two reads (running_snapshot)
            raw = description.raw_description
            return self.followed.keep(
                snapshot,
                description.run_id,
                description.history_length,
                # What the kept read weighs: the memo it came from, as Temporal encoded it.
                raw.workflow_execution_info.memo.ByteSize(),
                stillness=stillness_of(raw),
                mark=mark,
            )
        snapshot = await self._closed(task_id, description, state)
        if is_expired(snapshot, self._clock()):
            self._deletions.request(task_id, description.run_id)  # gone from Temporal too
            return snapshot
        self._terminal[task_id] = snapshot
        if len(self._terminal) > _TERMINAL_CACHE_SIZE:
            self._terminal.popitem(last=False)
        return snapshot
