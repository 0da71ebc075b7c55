"""The task list of each 2025-11-25 session, kept in Temporal (workflows/session_tasks.py).

Rules implemented:
- `add` records a task the session created: signal-with-start of the session's list, so the
  list exists from its first task on, whichever replica created it.
- `read` returns the tasks recorded after `cursor` (b"": from the start of the list's newest
  run) and the cursor after them: one history long-poll, which answers at once when the
  history has events the cursor has not seen, else when one comes, else empty after Temporal's
  long-poll timeout (20 s).
- A reader never opens a list: a session that created no task leaves nothing in Temporal
  (an `initialize` and a GET stream cost no workflow). A list that does not exist yet, or
  whose run has closed (after `MAX_TASKS`, or idle: workflows/session_tasks.py), is looked at
  again after `ABSENT_POLL`; the cursor of a closed run names it, so a reader follows the next
  run from its start and never reads the closed one twice.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import from_rpc_error
from workflows.session_tasks import (
    SESSION_TASKS_WORKFLOW,
    TASK_CREATED_SIGNAL,
    SessionTaskCreated,
    session_tasks_workflow_id,
)

ABSENT_POLL = timedelta(seconds=2)
_CLOSED = b"closed:"


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

    async def _run_id(self, session: str) -> str | None:
        """The newest run of the session's list (None: there is none)."""
        try:
            described = await self._client.get_workflow_handle(self._id(session)).describe(
                rpc_timeout=self._timeout
            )
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return None
            raise from_rpc_error(err, "follow the session's tasks") from err
        return described.run_id

    async def _absent(self, cursor: bytes) -> tuple[list[str], bytes]:
        await asyncio.sleep(ABSENT_POLL.total_seconds())
        return [], cursor

    async def read(self, session: str, cursor: bytes) -> tuple[list[str], bytes]:
        """The task ids recorded after `cursor`, and the cursor after them (see the module).

        A cursor names the run it reads (`<run id> <history page token>`), or the run read
        to its end (`closed:<run id>`); b"" is the newest run from its start."""
        run_id, _, token = cursor.partition(b" ")
        if cursor.startswith(_CLOSED):  # the run read last has closed: a newer one yet?
            newest = await self._run_id(session)
            if newest is None or newest.encode() == cursor[len(_CLOSED) :]:
                return await self._absent(cursor)
            run_id, token = newest.encode(), b""
        request = GetWorkflowExecutionHistoryRequest(
            namespace=self._client.namespace,
            execution=WorkflowExecution(workflow_id=self._id(session), run_id=run_id.decode()),
            next_page_token=token,
            wait_new_event=True,
        )
        try:
            response = await self._client.workflow_service.get_workflow_execution_history(
                request, timeout=self._long_poll
            )
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise from_rpc_error(err, "follow the session's tasks") from err
            return await self._absent(b"")  # no task yet: nothing is opened for a reader
        task_ids: list[str] = []
        for event in response.history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
                started = event.workflow_execution_started_event_attributes
                run_id = started.original_execution_run_id.encode()
            if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
                continue
            attributes = event.workflow_execution_signaled_event_attributes
            if attributes.signal_name == TASK_CREATED_SIGNAL:
                (created,) = await self._client.data_converter.decode(
                    attributes.input.payloads, [SessionTaskCreated]
                )
                task_ids.append(created.task_id)
        if not response.next_page_token:  # that run closed: the next one is read afresh
            return task_ids, _CLOSED + run_id
        return task_ids, run_id + b" " + response.next_page_token
