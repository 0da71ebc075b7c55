"""Tasks stored as Temporal workflows: the task store's interface (`TaskStore`) and its Temporal
implementation, whose parts sit in modules by concept: starts.py (create), reads.py and
snapshot_reads.py (get), long_polls.py (wait_for_events, session_tasks), visibility.py
(list_owned), signals.py (submit_input, steer, cancel).

Mapping (README "How a task maps onto Temporal"):
- create: `start_workflow` with workflow ID = taskId and the initial state in the memo; the
  call returns once Temporal has persisted the start, so a `tasks/get` right after finds it.
  With a quota, a slot is reserved in the owner's quota workflow first (quota.py).
- get: `describe()` (no worker needed, ~2 ms) for the execution status and the state the
  workflow mirrors into its memo; the close event for a result or failure. Answers and
  cancellation requests that a worker has not processed yet are read from the tail of the
  history, so a `tasks/get` right after `tasks/update` never lists an answered key, even when
  no worker is alive; that tail is read only when `describe()` shows a pending workflow task
  (what a signal or a cancellation request schedules), so a quiet task costs one RPC.
- get of a running task this replica follows (followed.py, its own history long-poll per
  task) and that has not changed since its last read: no call at all, as for a closed task.
- wait_for_events: one long-poll of the history (`GetWorkflowExecutionHistory` with
  `wait_new_event`), which returns when the task's history grows: what listen streams follow.
- submit_input: a signal (durable with no worker alive, survives server restarts).
- cancel: a Temporal cancellation request (durable, a history event).
- steer: a signal too (`mcp.steer`, `mcp.pause`, `mcp.resume`: workflows/steering.py).

Rules implemented:
- `get(task_id, owner)` compares the owner before anything else is read: someone else's task
  costs one `describe()`, as a missing one does. Evening out the time of every "not found",
  and the TTL, are task access's business (access.py), the same for any store.
- Errors are the task layer's own (errors.py): Temporal unreachable or too slow is
  `BackendUnavailable`, any other refusal `BackendRefused`; never a JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from temporalio.client import Client

from mcp_server.tasks.expiry import Deletions
from mcp_server.tasks.followed import FollowedTasks
from mcp_server.tasks.long_polls import TaskLongPolls
from mcp_server.tasks.not_found import NotFoundDeadline
from mcp_server.tasks.poll_interval import DEFAULT_MAX_MS
from mcp_server.tasks.quota import WAIT_S as QUOTA_WAIT_S
from mcp_server.tasks.quota import QuotaReservations
from mcp_server.tasks.quota_prefetch import PrefetchedSlots
from mcp_server.tasks.reads import TaskReads
from mcp_server.tasks.sequence import Sequences
from mcp_server.tasks.session_tasks import PER_PRINCIPAL as SESSION_LISTS_PER_PRINCIPAL
from mcp_server.tasks.session_tasks import SessionTaskLists
from mcp_server.tasks.signals import TaskSignals
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.starts import (
    INITIAL_STATUS_MESSAGE,
    TaskStarts,
    initial_search_attributes,
    new_task_id,
)
from mcp_server.tasks.timeouts import LONG_POLL_TIMEOUT, RPC_TIMEOUT
from mcp_server.tasks.visibility import TaskVisibility
from mcp_tasks.contracts.task_state import AuditStamp, SubmitInput, TaskInput
from mcp_tasks.identity import Identity
from workflows.steering import SteerInput

__all__ = [
    "INITIAL_STATUS_MESSAGE",
    "LONG_POLL_TIMEOUT",
    "RPC_TIMEOUT",
    "TaskStore",
    "TemporalTaskStore",
    "initial_search_attributes",
    "new_task_id",
]


# CANCELLED: our own rpc_timeout expired ("Timeout expired"; nothing else cancels an RPC), e.g.
# a Temporal too loaded to answer in time: retry later, not a refusal (500).
class TaskStore(Protocol):
    """Where tasks live. Every method raises only `TaskError`s (errors.py).

    `get` compares the owner before reading anything else, and marks a snapshot it did not
    read from the backend now `cached`: task access (access.py) learns the backend's pace from
    the others.
    """

    # When a "not found" may be answered, learnt from this store's reads (access.py).
    not_found: NotFoundDeadline

    async def create(self, task: TaskInput, workflow: str, quota: int = 0) -> TaskSnapshot: ...
    async def get(
        self, task_id: str, owner: str | None = None, identity: Identity | None = None
    ) -> TaskSnapshot | None: ...
    async def wait_for_events(
        self, task_id: str, cursor: bytes
    ) -> tuple[int, bytes | None] | None: ...
    async def list_owned(
        self, owner: str, page_size: int, cursor: str | None
    ) -> tuple[list[TaskSnapshot], str | None]: ...
    async def session_tasks(self, session: str, cursor: bytes) -> tuple[list[str], bytes]: ...
    async def submit_input(self, task_id: str, update: SubmitInput) -> None: ...
    async def cancel(self, task_id: str, stamp: AuditStamp) -> None: ...
    async def steer(self, task_id: str, signal: str, payload: SteerInput | AuditStamp) -> None: ...


class TemporalTaskStore(TaskStarts, TaskReads, TaskVisibility, TaskLongPolls, TaskSignals):
    """The `TaskStore` over Temporal: its parts by concept, one state (set here)."""

    def __init__(
        self,
        client: Client,
        task_queue: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        poll_interval_max_ms: int = DEFAULT_MAX_MS,
        local_client: Callable[[], Client | None] | None = None,
        quota_lazy_release: bool = True,
        quota_wait_s: float = QUOTA_WAIT_S,
        session_lists_per_principal: int = SESSION_LISTS_PER_PRINCIPAL,
        followed_max: int = 0,
        followed_max_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self._client = client
        self._local_client = local_client
        self._starts_in_flight = 0
        self._clock = clock
        self._poll_interval_max_ms = poll_interval_max_ms
        self._task_queue = task_queue
        self._terminal: OrderedDict[str, TaskSnapshot] = OrderedDict()
        self._quota = QuotaReservations(
            client, task_queue, wait_s=quota_wait_s, lazy_release=quota_lazy_release
        )
        self._ahead = PrefetchedSlots(self._quota, new_task_id)
        self._deletions = Deletions(client)
        self.not_found = NotFoundDeadline()
        self._sequences = Sequences(client, RPC_TIMEOUT)
        self._sessions = SessionTaskLists(
            client, task_queue, RPC_TIMEOUT, LONG_POLL_TIMEOUT, session_lists_per_principal
        )
        # Running tasks read without a call while their history stays the same (followed.py);
        # 0: every read goes to Temporal.
        self.followed = FollowedTasks(self._run_events, followed_max, followed_max_bytes)

    async def close(self) -> None:
        """Give back the open-task slots this replica reserved ahead (a stopping server):
        bounded, since a Temporal that is gone cannot take them (its reclaim will)."""
        await self.followed.close()
        self._ahead.release_all()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(RPC_TIMEOUT.total_seconds()):
                await self._ahead.drain()
