"""The task list of each 2025-11-25 session, kept in Temporal (workflows/session_tasks.py).

Rules implemented:
- `add` records a task the session created: signal-with-start of the session's list, so the
  list exists from its first task on, whichever replica created it.
- `read` returns the tasks recorded after `cursor` (b"": from the start of the list's newest
  run) and the cursor after them: one history long-poll, which answers at once when the
  history has events the cursor has not seen, else when one comes, else empty after Temporal's
  long-poll timeout (20 s). A list that does not exist yet, or whose run has closed, is opened
  (a start that joins a running one), and read from its start: a stream opened before the
  session's first task waits on it like on any other list.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import from_rpc_error
from workflows.session_tasks import (
    SESSION_TASKS_WORKFLOW,
    TASK_CREATED_SIGNAL,
    SessionTaskCreated,
    session_tasks_workflow_id,
)


class SessionTaskLists:
    def __init__(
        self, client: Client, task_queue: str, timeout: timedelta, long_poll: timedelta
    ) -> None:
        self._client = client
        self._task_queue = task_queue
        self._timeout = timeout
        self._long_poll = long_poll

    def _id(self, session: str) -> str:
        return session_tasks_workflow_id(self._task_queue, session)

    async def add(self, session: str, task_id: str) -> None:
        """Record that `session` created `task_id`."""
        try:
            await self._client.start_workflow(
                SESSION_TASKS_WORKFLOW,
                session,
                id=self._id(session),
                task_queue=self._task_queue,
                start_signal=TASK_CREATED_SIGNAL,
                start_signal_args=[SessionTaskCreated(task_id)],
                static_summary="MCP session task list",
                rpc_timeout=self._timeout,
            )
        except RPCError as err:
            raise from_rpc_error(err, "record the session's task") from err

    async def _open(self, session: str) -> None:
        try:
            await self._client.start_workflow(
                SESSION_TASKS_WORKFLOW,
                session,
                id=self._id(session),
                task_queue=self._task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                static_summary="MCP session task list",
                rpc_timeout=self._timeout,
            )
        except RPCError as err:
            raise from_rpc_error(err, "open the session's task list") from err

    async def read(self, session: str, cursor: bytes) -> tuple[list[str], bytes]:
        """The task ids recorded after `cursor`, and the cursor after them (see the module)."""
        request = GetWorkflowExecutionHistoryRequest(
            namespace=self._client.namespace,
            execution=WorkflowExecution(workflow_id=self._id(session)),
            next_page_token=cursor,
            wait_new_event=True,
        )
        try:
            response = await self._client.workflow_service.get_workflow_execution_history(
                request, timeout=self._long_poll
            )
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise from_rpc_error(err, "follow the session's tasks") from err
            await self._open(session)
            return [], b""
        task_ids: list[str] = []
        for event in response.history.events:
            if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
                continue
            attributes = event.workflow_execution_signaled_event_attributes
            if attributes.signal_name == TASK_CREATED_SIGNAL:
                (created,) = await self._client.data_converter.decode(
                    attributes.input.payloads, [SessionTaskCreated]
                )
                task_ids.append(created.task_id)
        if not response.next_page_token:  # that run closed: the next one starts afresh
            await self._open(session)
        return task_ids, response.next_page_token
