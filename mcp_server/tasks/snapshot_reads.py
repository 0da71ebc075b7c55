"""A task as read from Temporal, one `describe()` at a time (the reads of tasks/store.py): a
running task from the memo it carries and the history's tail that no workflow task has seen
yet, a closed one as its execution ended (its result or failure from the close event), each
with the pollIntervalMs its quiet time earns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.description import Description, describe
from mcp_server.tasks.errors import from_rpc_error
from mcp_server.tasks.sequence import Sequences
from mcp_server.tasks.snapshots import (
    TaskSnapshot,
    advertised,
    failure_of,
    snapshot_of,
    with_activity_progress,
)
from mcp_server.tasks.timeouts import RPC_TIMEOUT
from mcp_server.tasks.ttl import ttl_after_close
from mcp_tasks.contracts.task_state import (
    CANCEL_REQUESTED_SIGNAL,
    MEMO_KEY,
    SUBMIT_INPUT_SIGNAL,
    SubmitInput,
    TaskState,
    iso_timestamp,
)
from mcp_tasks.contracts.task_status import (
    CANCEL_REQUESTED_MESSAGE,
    CANCELLED_MESSAGE,
    closed_status,
    running_status,
)
from mcp_tasks.tracer import temporal_span

_HISTORY_PAGES_SCANNED = 4


class SnapshotReads:
    """Snapshots from what Temporal answers: a part of `TemporalTaskStore` (store.py)."""

    _client: Client
    _clock: Callable[[], datetime]
    _poll_interval_max_ms: int
    _sequences: Sequences

    async def _describe(self, task_id: str) -> Description | None:
        try:
            return await describe(self._client, task_id, RPC_TIMEOUT)
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return None
            raise from_rpc_error(err, "read the task") from err

    def _advertise(self, snapshot: TaskSnapshot) -> TaskSnapshot:
        return advertised(snapshot, self._clock(), self._poll_interval_max_ms)

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
