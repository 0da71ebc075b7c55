"""What the task store waits on (tasks/store.py), one long-poll each: a task's history
(`wait_for_events`, what listen streams follow; `_run_events`, what followed.py follows) and a
2025-11-25 session's task list (`session_tasks`).
"""

from __future__ import annotations

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import (
    GetWorkflowExecutionHistoryRequest,
    GetWorkflowExecutionHistoryResponse,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import from_rpc_error
from mcp_server.tasks.followed import FollowedTasks
from mcp_server.tasks.session_tasks import SessionTaskLists
from mcp_server.tasks.timeouts import LONG_POLL_TIMEOUT


class TaskLongPolls:
    """The long-polls: a part of `TemporalTaskStore` (store.py), which sets these attributes."""

    _client: Client
    followed: FollowedTasks
    _sessions: SessionTaskLists

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

    async def session_tasks(self, session: str, cursor: bytes) -> tuple[list[str], bytes]:
        """The ids of the tasks the 2025-11-25 session `session` created after `cursor` (b"":
        all of them), and the cursor after them: one long-poll of the session's task list
        (session_tasks.py), which waits for the next task when there is none yet."""
        return await self._sessions.read(session, cursor)
