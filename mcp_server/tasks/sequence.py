"""A task's sequence number: how many events its history holds, across every run of the task.

Rules implemented:
- Temporal numbers a run's events 1, 2, 3...: the history length `describe()` reports only
  grows while the run lives, and is the same on every replica and after any restart (it is
  Temporal's, not a process's). A task's first run is the common case: its sequence is that
  length, and costs no call of its own.
- A task that continued as new (TaskWorkflow.continue_as_new) goes on in a new run whose events
  start again at 1. Its sequence adds the lengths of the runs before it: each earlier run is
  closed, so its length never changes, and is read once per replica (the predecessor named in a
  run's first event, then the last event of that run) and kept (`_MAX_RUNS_KEPT` runs).
- So a later read of a task never has a smaller sequence than an earlier one, whichever replica
  made each: what `notifications/tasks` carries for clients to drop a stale notification.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import (
    GetWorkflowExecutionHistoryRequest,
    GetWorkflowExecutionHistoryReverseRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError

from mcp_server.tasks.description import Description
from mcp_server.tasks.errors import from_rpc_error

_MAX_RUNS_KEPT = 4096


class Sequences:
    """The events of the runs before a task's current one, by run id (closed runs only)."""

    def __init__(self, client: Client, timeout: timedelta) -> None:
        self._client = client
        self._timeout = timeout
        self._before: OrderedDict[str, int] = OrderedDict()

    async def of(self, task_id: str, description: Description) -> int:
        """The task's sequence number at the moment `description` was read."""
        info = description.raw_description.workflow_execution_info
        run_id = info.execution.run_id
        if not info.first_run_id or info.first_run_id == run_id:
            return description.history_length
        return await self._events_before(task_id, run_id) + description.history_length

    async def _events_before(self, task_id: str, run_id: str) -> int:
        known = self._before.get(run_id)
        if known is not None:
            return known
        previous = await self._predecessor(task_id, run_id)
        total = 0
        if previous:
            total = await self._events_before(task_id, previous)
            total += await self._length(task_id, previous)
        self._before[run_id] = total
        if len(self._before) > _MAX_RUNS_KEPT:
            self._before.popitem(last=False)
        return total

    async def _predecessor(self, task_id: str, run_id: str) -> str:
        """The run `run_id` continued (its first event names it), "" for a task's first run."""
        request = GetWorkflowExecutionHistoryRequest(
            namespace=self._client.namespace,
            execution=WorkflowExecution(workflow_id=task_id, run_id=run_id),
            maximum_page_size=1,
        )
        try:
            response = await self._client.workflow_service.get_workflow_execution_history(
                request, retry=True, timeout=self._timeout
            )
        except RPCError as err:
            raise from_rpc_error(err, "read the task history") from err
        events = response.history.events
        if not events:
            return ""
        started = events[0].workflow_execution_started_event_attributes
        return started.continued_execution_run_id

    async def _length(self, task_id: str, run_id: str) -> int:
        """How many events the closed run `run_id` holds: the id of its last one."""
        request = GetWorkflowExecutionHistoryReverseRequest(
            namespace=self._client.namespace,
            execution=WorkflowExecution(workflow_id=task_id, run_id=run_id),
            maximum_page_size=1,
        )
        try:
            response = await self._client.workflow_service.get_workflow_execution_history_reverse(
                request, retry=True, timeout=self._timeout
            )
        except RPCError as err:
            raise from_rpc_error(err, "read the task history") from err
        events = response.history.events
        return events[0].event_id if events else 0
