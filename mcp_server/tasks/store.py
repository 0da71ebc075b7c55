"""Tasks stored as Temporal workflows: the only module of the server that calls Temporal
(quota.py reserves open-task slots for its create path).

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
import base64
import contextlib
import logging
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import (
    GetWorkflowExecutionHistoryRequest,
    GetWorkflowExecutionHistoryResponse,
    GetWorkflowExecutionHistoryReverseRequest,
)
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.approvers import may_read
from mcp_server.tasks.description import Description, describe
from mcp_server.tasks.errors import (
    ArgumentsTooLarge,
    BackendRefused,
    BackendUnavailable,
    TaskError,
    from_rpc_error,
)
from mcp_server.tasks.expiry import Deletions
from mcp_server.tasks.followed import TASK_READS, FollowedTasks
from mcp_server.tasks.idempotency import IdempotencyConflict
from mcp_server.tasks.memo import task_state_of
from mcp_server.tasks.not_found import NotFoundDeadline
from mcp_server.tasks.poll_interval import DEFAULT_MAX_MS, advertised_ms
from mcp_server.tasks.quota import WAIT_S as QUOTA_WAIT_S
from mcp_server.tasks.quota import QuotaExceeded, QuotaReservations
from mcp_server.tasks.quota_prefetch import PrefetchedSlots
from mcp_server.tasks.sequence import Sequences
from mcp_server.tasks.session_tasks import PER_PRINCIPAL as SESSION_LISTS_PER_PRINCIPAL
from mcp_server.tasks.session_tasks import SessionTaskLists
from mcp_server.tasks.snapshots import (
    TaskSnapshot,
    failure_of,
    listed_snapshot,
    snapshot_of,
    with_activity_progress,
)
from mcp_server.tasks.ttl import is_expired, ttl_after_close
from mcp_tasks.contracts.task_state import (
    CANCEL_REQUESTED_SIGNAL,
    MEMO_KEY,
    SEARCH_ATTRIBUTE_OWNER,
    SEARCH_ATTRIBUTE_STATUS,
    SEARCH_ATTRIBUTE_TOOL,
    SUBMIT_INPUT_SIGNAL,
    AuditStamp,
    SubmitInput,
    TaskInput,
    TaskState,
    iso_timestamp,
)
from mcp_tasks.contracts.task_status import (
    CANCEL_REQUESTED_MESSAGE,
    CANCELLED_MESSAGE,
    TERMINAL_STATUSES,
    closed_status,
    published_status,
    running_status,
)
from mcp_tasks.identity import Identity
from mcp_tasks.tracer import temporal_span
from workflows.quota import RELEASE_BY_LOCAL_ACTIVITY, RELEASE_LAZILY
from workflows.steering import SteerInput

log = logging.getLogger("mcp_server.tasks.store")
INITIAL_STATUS_MESSAGE = "Queued"
RPC_TIMEOUT = timedelta(seconds=5)
# Eager start is asked for while fewer starts than this are in flight from this process.
EAGER_MAX_IN_FLIGHT = 1
# Longer than Temporal's own long-poll timeout (20 s), which then answers "nothing new".
LONG_POLL_TIMEOUT = timedelta(seconds=30)
_HISTORY_PAGES_SCANNED = 4
_TERMINAL_CACHE_SIZE = 4096


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


def new_task_id() -> str:
    """128 random bits; the prefix lets operators tell MCP tasks apart in Temporal's UI."""
    return f"mcp-task-{secrets.token_hex(16)}"


def initial_search_attributes(task: TaskInput) -> TypedSearchAttributes:
    """The search attributes a task starts with (bench/floor_raw.py starts its floor with them
    too, so the floor's start stays the server's)."""
    keyword = SearchAttributeKey.for_keyword
    return TypedSearchAttributes(
        [
            SearchAttributePair(keyword(SEARCH_ATTRIBUTE_STATUS), published_status(False)),
            SearchAttributePair(keyword(SEARCH_ATTRIBUTE_TOOL), task.tool),
            SearchAttributePair(keyword(SEARCH_ATTRIBUTE_OWNER), task.owner),
        ]
    )


class TemporalTaskStore:
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

    # ----- create ------------------------------------------------------------------------

    async def _start(
        self, task: TaskInput, workflow: str, replaces_expired: bool = False
    ) -> WorkflowHandle[Any, Any]:
        memo = TaskState.initial(task, INITIAL_STATUS_MESSAGE).to_memo()
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
        try:
            await self._start(task, workflow, replaces_expired=expired)
        except (ArgumentsTooLarge, BackendRefused, WorkflowAlreadyStartedError) as err:
            if quota:  # a closed keyed task released its slot when it closed
                await self._quota.release(task.owner, task.task_id)
            if not isinstance(err, WorkflowAlreadyStartedError):
                raise
        else:
            if task.session:
                await self._note_in_session(task)
        if task.call_digest:  # started, or joined a twin call's task: compare with it
            existing, _ = await self._keyed(task)
            if existing is None:
                raise BackendUnavailable(
                    "Temporal", "the task of this idempotency key expired meanwhile", 1.0
                )
            return existing
        return snapshot_of(TaskState.initial(task, INITIAL_STATUS_MESSAGE))

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

    # ----- get ---------------------------------------------------------------------------

    async def _describe(self, task_id: str) -> Description | None:
        try:
            return await describe(self._client, task_id, RPC_TIMEOUT)
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return None
            raise from_rpc_error(err, "read the task") from err

    def _advertise(self, snapshot: TaskSnapshot) -> TaskSnapshot:
        """The snapshot with the pollIntervalMs its quiet time earns (tasks/poll_interval.py)."""
        if snapshot.poll_interval_ms is None:
            return snapshot
        interval = advertised_ms(
            snapshot.poll_interval_ms,
            snapshot.last_updated_at,
            self._clock(),
            self._poll_interval_max_ms,
        )
        return replace(snapshot, advertised_poll_interval_ms=interval)

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
                quiet=not raw.HasField("pending_workflow_task") and not raw.pending_activities,
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

    async def running_snapshot(
        self, task_id: str, description: Description, state: TaskState
    ) -> TaskSnapshot:
        """A running task as `get` shows it, from a `describe()` answer and the memo it carries,
        which may be older than the history: answers and cancellation requests no workflow task
        has seen yet are read from the history's tail, and a task that ended meanwhile is read
        as closed."""
        raw = description.raw_description
        pending_task = raw.pending_workflow_task if raw.HasField("pending_workflow_task") else None
        answered: set[str] = set()
        cancel_requested, newest_event = False, 0
        if pending_task is not None:
            # Only events that wait for a workflow task can be unseen by the memo: a signal
            # or a cancellation request schedules one. With none pending, describe() alone is
            # the whole truth and the history is not read (one RPC per tasks/get).
            answered, cancel_requested, newest_event = await self._unprocessed(task_id)
        if newest_event > description.history_length:
            # The workflow moved on between the two reads: take the fresher memo.
            fresher = await self._describe(task_id)
            if fresher is not None:
                description = fresher
                state = TaskState.from_memo(await fresher.memo_value(MEMO_KEY, None)) or state
                if fresher.status != WorkflowExecutionStatus.RUNNING:
                    # It even ended (answered and finished in one workflow task): the answered
                    # question must not show again, so this read is the closed task's.
                    return await self._closed(task_id, fresher, state)
        snapshot = snapshot_of(state)
        pending = {k: v for k, v in snapshot.input_requests.items() if k not in answered}
        status, said = running_status(snapshot.status, unanswered=bool(pending))
        message = said or snapshot.status_message
        if cancel_requested:
            message = CANCEL_REQUESTED_MESSAGE
        if status == "working" and message:
            message = with_activity_progress(message, description, self._clock())
        attempt = pending_task.attempt if pending_task is not None else 0
        if attempt > 2:
            message = (
                f"{message} (the worker has failed this task {attempt - 1} times; see its logs)"
            )
        sequence = await self._sequences.of(task_id, description)
        return replace(
            snapshot,
            status=status,
            status_message=message,
            input_requests=pending,
            sequence=sequence,
        )

    async def _unprocessed(self, task_id: str) -> tuple[set[str], bool, int]:
        """Answers and cancellation requests recorded after the last completed workflow task.

        The memo reflects every event up to the last WORKFLOW_TASK_COMPLETED; what came after
        it has not been seen by the workflow yet.
        """
        answered: set[str] = set()
        cancel_requested = False
        newest = 0
        token = b""
        for _ in range(_HISTORY_PAGES_SCANNED):
            request = GetWorkflowExecutionHistoryReverseRequest(
                namespace=self._client.namespace,
                execution=WorkflowExecution(workflow_id=task_id),
                maximum_page_size=50,
                next_page_token=token,
            )
            service = self._client.workflow_service
            try:
                with temporal_span("GetWorkflowExecutionHistoryReverse", task_id):
                    response = await service.get_workflow_execution_history_reverse(
                        request, retry=True, timeout=RPC_TIMEOUT
                    )
            except RPCError as err:
                raise from_rpc_error(err, "read the task history") from err
            for event in response.history.events:
                newest = max(newest, event.event_id)
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                    return answered, cancel_requested, newest
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
                    cancel_requested = True
                elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
                    attributes = event.workflow_execution_signaled_event_attributes
                    if attributes.signal_name == CANCEL_REQUESTED_SIGNAL:
                        # Sent just before the cancellation request (cancel), which Temporal
                        # holds back from the history while a workflow task is running: this
                        # signal is then the only sign of it in the history yet.
                        cancel_requested = True
                    elif attributes.signal_name == SUBMIT_INPUT_SIGNAL:
                        (update,) = await self._client.data_converter.decode(
                            attributes.input.payloads, [SubmitInput]
                        )
                        answered.update(update.responses)
            token = response.next_page_token
            if not token:
                break
        return answered, cancel_requested, newest

    async def _closed(
        self, task_id: str, description: Description, state: TaskState
    ) -> TaskSnapshot:
        base = snapshot_of(state)
        closed_at = (
            iso_timestamp(description.close_time)
            if description.close_time
            else base.last_updated_at
        )
        base = replace(
            base,
            input_requests={},
            last_updated_at=closed_at,
            ttl_ms=ttl_after_close(base.created_at, closed_at, base.ttl_ms),
            sequence=await self._sequences.of(task_id, description),
        )
        # How the execution ended decides, whatever the memo said last (task_status.py).
        execution = description.status.name if description.status else ""
        status = closed_status(execution) or base.status
        if description.status == WorkflowExecutionStatus.CANCELED:
            # The workflow's last word (e.g. how much was done), or plainly "Cancelled" when it
            # never got to say it (a cancellation of a task no worker ever picked up).
            said = state.status == status and base.status_message
            return replace(base, status=status, status_message=said or CANCELLED_MESSAGE)
        handle = self._client.get_workflow_handle(task_id, run_id=description.run_id)
        try:
            result = await handle.result(follow_runs=False, rpc_timeout=RPC_TIMEOUT)
        except WorkflowFailureError as err:
            error, message = failure_of(err)
            return replace(base, status=status, status_message=message, error=error)
        except RPCError as err:
            raise from_rpc_error(err, "read the task result") from err
        return replace(base, status=status, status_message=base.status_message, result=result)

    async def wait_for_events(self, task_id: str, cursor: bytes) -> tuple[int, bytes | None] | None:
        """Wait until the task's history has events after `cursor` (b"": its start): one
        long-poll. Returns how many events came and the cursor after them: (0, cursor) when
        Temporal's long-poll timed out with nothing new, a None cursor once the history is
        complete (that run closed; a task that continued as new goes on in a newer run, which
        b"" starts reading). None: no such workflow."""
        response = await self._history_long_poll(task_id, "", cursor)
        if response is None:
            return None
        if response.history.events:
            # The watcher reads the task next: not the copy this replica follows (which may
            # not have heard of these events yet).
            self.followed.changed(task_id)
        return len(response.history.events), response.next_page_token or None

    async def _run_events(
        self, task_id: str, run_id: str, cursor: bytes
    ) -> tuple[int, bytes | None] | None:
        """The history long-poll of one run, for followed.py: the id of the last event after
        `cursor` (0: none came), the cursor after it (None: the run closed); None: no such
        run."""
        response = await self._history_long_poll(task_id, run_id, cursor)
        if response is None:
            return None
        events = response.history.events
        return (events[-1].event_id if events else 0), response.next_page_token or None

    async def _history_long_poll(
        self, task_id: str, run_id: str, cursor: bytes
    ) -> GetWorkflowExecutionHistoryResponse | None:
        """One long-poll of the history after `cursor`, of run `run_id` ("": the latest run):
        what the watchers and the followed reads each wait on. None: no such workflow or run."""
        request = GetWorkflowExecutionHistoryRequest(
            namespace=self._client.namespace,
            execution=WorkflowExecution(workflow_id=task_id, run_id=run_id),
            next_page_token=cursor,
            wait_new_event=True,
        )
        try:
            return await self._client.workflow_service.get_workflow_execution_history(
                request, timeout=LONG_POLL_TIMEOUT
            )
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return None
            raise from_rpc_error(err, "follow the task history") from err

    # ----- update and cancel -------------------------------------------------------------

    async def submit_input(self, task_id: str, update: SubmitInput) -> None:
        await self._signal(task_id, SUBMIT_INPUT_SIGNAL, update, "deliver the answers")

    async def steer(self, task_id: str, signal: str, payload: SteerInput | AuditStamp) -> None:
        """Send a steering signal (workflows/steering.py: a steer message, a pause, a resume)
        to the task: durable with no worker alive, as an answer is."""
        await self._signal(task_id, signal, payload, "steer the task")

    async def _signal(self, task_id: str, signal: str, payload: object, doing: str) -> None:
        """Signal the task; a task closed meanwhile has nothing to take in (not an error).
        Either way the caller's next tasks/get reads Temporal, also when the signal failed: it
        may have reached Temporal all the same."""
        try:
            await self._client.get_workflow_handle(task_id).signal(
                signal, payload, rpc_timeout=RPC_TIMEOUT
            )
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise from_rpc_error(err, doing) from err
        finally:
            self.followed.changed(task_id)

    async def count_open(self, owner: str) -> int:
        """`owner`'s running tasks in the visibility store, which lags: not the quota (that is
        quota.py's reservations), only what bench/quota.py compares it with."""
        query = f'{SEARCH_ATTRIBUTE_OWNER}="{owner}" AND ExecutionStatus="Running"'
        try:
            return (await self._client.count_workflows(query, rpc_timeout=RPC_TIMEOUT)).count
        except RPCError as err:
            raise from_rpc_error(err, "count open tasks") from err

    async def list_owned(
        self, owner: str, page_size: int, cursor: str | None
    ) -> tuple[list[TaskSnapshot], str | None]:
        """One page of `owner`'s tasks, in the visibility store's order (the memo,
        no history read). `cursor` is the opaque token of the previous page; a malformed one
        is a ValueError."""
        try:
            token = base64.urlsafe_b64decode(cursor.encode("ascii")) if cursor else None
        except (ValueError, UnicodeError) as err:
            raise ValueError("malformed cursor") from err
        # A task that continued as new is one task: only its newest run is listed.
        query = f'{SEARCH_ATTRIBUTE_OWNER}="{owner}" AND ExecutionStatus!="ContinuedAsNew"'
        pages = self._client.list_workflows(
            query, page_size=page_size, next_page_token=token, rpc_timeout=RPC_TIMEOUT
        )
        try:
            await pages.fetch_next_page()
        except RPCError as err:
            if err.status == RPCStatusCode.INVALID_ARGUMENT:
                raise ValueError(err.message) from err
            raise from_rpc_error(err, "list tasks") from err
        snapshots: list[TaskSnapshot] = []
        for execution in pages.current_page or []:
            state = await task_state_of(execution)
            if state is None or state.owner != owner:
                continue
            snapshots.append(self._advertise(listed_snapshot(state, execution.status)))
        next_token = pages.next_page_token
        next_cursor = base64.urlsafe_b64encode(next_token).decode("ascii") if next_token else None
        return snapshots, next_cursor

    async def session_tasks(self, session: str, cursor: bytes) -> tuple[list[str], bytes]:
        """The ids of the tasks the 2025-11-25 session `session` created after `cursor` (b"":
        all of them), and the cursor after them: one long-poll of the session's task list
        (session_tasks.py), which waits for the next task when there is none yet."""
        return await self._sessions.read(session, cursor)

    async def cancel(self, task_id: str, stamp: AuditStamp) -> None:
        handle = self._client.get_workflow_handle(task_id)
        try:
            # Who asked goes into the history first: a cancellation request carries no payload.
            await handle.signal(CANCEL_REQUESTED_SIGNAL, stamp, rpc_timeout=RPC_TIMEOUT)
            await handle.cancel(rpc_timeout=RPC_TIMEOUT)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:  # closed meanwhile: the ack stands
                raise from_rpc_error(err, "cancel the task") from err
        finally:
            self.followed.changed(task_id)
