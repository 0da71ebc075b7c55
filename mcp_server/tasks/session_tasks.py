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
  whose run has closed (after `MAX_TASKS`, idle: workflows/session_tasks.py, or for its
  principal's bound), is read again as soon as this replica adds a task to it (an in-process
  wake, set by `add`), and otherwise after `ABSENT_POLL`: a task another replica adds reaches
  such a reader within `ABSENT_POLL`, and a reader with nothing to follow costs Temporal one
  call per `ABSENT_POLL` (120 an hour), where a long-poll would hold a call open all along.
  The cursor of a closed run names it, so a reader follows the next run from its start and
  never reads the closed one twice.
- Each principal holds at most `per_principal` open lists on this replica: the list its task
  opens past that closes the principal's list least recently added to (terminated: a stream
  still reads its tasks, and the session's next task opens a new run). Not a refusal: a host
  may run many sessions under one principal (a gateway, the conformance suite), and a closed
  list loses nothing. A list no task was added to for `IDLE_CLOSE` has closed itself and is
  no longer counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from datetime import timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import from_rpc_error
from mcp_tasks.logging import principal_tag
from workflows.session_tasks import (
    IDLE_CLOSE,
    SESSION_TASKS_WORKFLOW,
    TASK_CREATED_SIGNAL,
    SessionTaskCreated,
    session_tasks_workflow_id,
)

ABSENT_POLL = timedelta(seconds=30)
PER_PRINCIPAL = 100
CLOSED_BY_CAP = "closed: its principal opened more session task lists than allowed"
_CLOSED = b"closed:"

log = logging.getLogger(__name__)


class SessionTaskLists:
    def __init__(
        self,
        client: Client,
        task_queue: str,
        timeout: timedelta,
        long_poll: timedelta,
        per_principal: int = PER_PRINCIPAL,
    ) -> None:
        self._client = client
        self._task_queue = task_queue
        self._timeout = timeout
        self._long_poll = long_poll
        self._per_principal = per_principal
        # principal -> session -> when this replica last added a task to its list (monotonic),
        # least recently added first.
        self._open: dict[str, OrderedDict[str, float]] = {}
        # session -> the wakes of this replica's readers waiting for its list to (re)open.
        self._readers: dict[str, set[asyncio.Event]] = {}

    def _id(self, session: str) -> str:
        return session_tasks_workflow_id(self._task_queue, session)

    def _lists_of(self, owner: str) -> OrderedDict[str, float]:
        lists = self._open.setdefault(owner, OrderedDict())
        idle_since = time.monotonic() - IDLE_CLOSE.total_seconds()
        while lists and next(iter(lists.values())) < idle_since:
            lists.popitem(last=False)  # idle that long: the list has closed itself
        return lists

    async def add(self, owner: str, session: str, task_id: str) -> None:
        """Record that `session`, of principal `owner`, created `task_id`; past the
        principal's bound, close its list least recently added to (see the module)."""
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
        for wake in self._readers.get(session, ()):
            wake.set()
        lists = self._lists_of(owner)
        lists[session] = time.monotonic()
        lists.move_to_end(session)
        while len(lists) > self._per_principal:
            oldest, _ = lists.popitem(last=False)
            await self._close(owner, oldest)

    async def _close(self, owner: str, session: str) -> None:
        """Close a session's list for its principal's bound: a failure is logged (the list
        still closes itself once idle)."""
        log.warning(
            "principal %s holds more than %d session task lists: closing the least recent",
            principal_tag(owner),
            self._per_principal,
        )
        handle = self._client.get_workflow_handle(self._id(session))
        try:
            await handle.terminate(reason=CLOSED_BY_CAP, rpc_timeout=self._timeout)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:  # closed meanwhile: as good
                log.warning("a session task list could not be closed: %s", err.message)

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

    async def _absent(self, wake: asyncio.Event, cursor: bytes) -> tuple[list[str], bytes]:
        """Nothing to read at `cursor` yet: back after this replica's next task for the
        session (`wake`), or after `ABSENT_POLL` for one another replica added."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), ABSENT_POLL.total_seconds())
        return [], cursor

    async def read(self, session: str, cursor: bytes) -> tuple[list[str], bytes]:
        """The task ids recorded after `cursor`, and the cursor after them (see the module).

        A cursor names the run it reads (`<run id> <history page token>`), or the run read
        to its end (`closed:<run id>`); b"" is the newest run from its start."""
        # Listening before Temporal is asked: a task added meanwhile is not missed.
        wake = asyncio.Event()
        readers = self._readers.setdefault(session, set())
        readers.add(wake)
        try:
            return await self._read(session, cursor, wake)
        finally:
            readers.discard(wake)
            if not readers:
                self._readers.pop(session, None)

    async def _read(
        self, session: str, cursor: bytes, wake: asyncio.Event
    ) -> tuple[list[str], bytes]:
        run_id, _, token = cursor.partition(b" ")
        if cursor.startswith(_CLOSED):  # the run read last has closed: a newer one yet?
            newest = await self._run_id(session)
            if newest is None or newest.encode() == cursor[len(_CLOSED) :]:
                return await self._absent(wake, cursor)
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
            return await self._absent(wake, b"")  # no task yet: nothing is opened for a reader
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
