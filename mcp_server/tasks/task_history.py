"""What the approval inbox reads from a task's Temporal history, which its memo does not keep
(behind `InboxStore`, inbox_store.py):

- `decisions`: for each answered question, the answer (its action and content), who gave it
  and when: the `mcp.submit_input` signal that delivered it, and the signal's event time.
  Only the first delivery of a key counts (the workflow ignores later ones).
- `Arguments`: the arguments a task was started with (its first event's input), minus its
  secret arguments, for the list's summary; cached (they never change).

Payloads go through the client's data converter (the payload key decrypts them). At most
`MAX_PAGES` pages of history are read; a longer history shows what those pages hold.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client
from temporalio.service import RPCError

from mcp_server.tasks.errors import from_rpc_error
from mcp_server.tasks.timeouts import RPC_TIMEOUT
from mcp_tasks.contracts.task_state import SUBMIT_INPUT_SIGNAL, SubmitInput, TaskInput

MAX_PAGES = 10
PAGE_SIZE = 500
_CACHED_ARGUMENTS = 2000


@dataclass(frozen=True)
class Decision:
    answer: dict[str, Any]
    by: str
    at: str  # ISO 8601, UTC


async def _events(client: Client, task_id: str, page_size: int, pages: int) -> list[HistoryEvent]:
    found: list[HistoryEvent] = []
    token = b""
    for _ in range(pages):
        request = GetWorkflowExecutionHistoryRequest(
            namespace=client.namespace,
            execution=WorkflowExecution(workflow_id=task_id),
            maximum_page_size=page_size,
            next_page_token=token,
        )
        try:
            response = await client.workflow_service.get_workflow_execution_history(
                request, retry=True, timeout=RPC_TIMEOUT
            )
        except RPCError as err:
            raise from_rpc_error(err, "read the task history") from err
        found.extend(response.history.events)
        token = response.next_page_token
        if not token:
            break
    return found


def _when(event: HistoryEvent) -> str:
    return event.event_time.ToDatetime(tzinfo=UTC).isoformat().replace("+00:00", "Z")


async def decisions(client: Client, task_id: str, keys: set[str]) -> dict[str, Decision]:
    """The answers to `keys` (answered questions of the task), as first delivered."""
    found: dict[str, Decision] = {}
    if not keys:
        return found
    for event in await _events(client, task_id, PAGE_SIZE, MAX_PAGES):
        if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            continue
        attributes = event.workflow_execution_signaled_event_attributes
        if attributes.signal_name != SUBMIT_INPUT_SIGNAL:
            continue
        (update,) = await client.data_converter.decode(attributes.input.payloads, [SubmitInput])
        for key, answer in update.responses.items():
            if key in keys and key not in found and isinstance(answer, dict):
                found[key] = Decision(answer, update.by or "someone", _when(event))
    return found


def _public(task: TaskInput) -> dict[str, Any]:
    secret = set(task.secret_arguments)
    return {name: value for name, value in task.arguments.items() if name not in secret}


class Arguments:
    """The start arguments of tasks (without their secret ones), read once each (the newest
    `_CACHED_ARGUMENTS` kept). A task whose first event cannot be read has none."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._known: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def of(self, task_id: str) -> dict[str, Any]:
        if task_id in self._known:
            self._known.move_to_end(task_id)
            return self._known[task_id]
        events = await _events(self._client, task_id, 1, 1)
        public: dict[str, Any] = {}
        if events and events[0].HasField("workflow_execution_started_event_attributes"):
            payloads = events[0].workflow_execution_started_event_attributes.input.payloads
            decoded = await self._client.data_converter.decode(payloads, [TaskInput])
            if decoded and isinstance(decoded[0], TaskInput):
                public = _public(decoded[0])
        self._known[task_id] = public
        while len(self._known) > _CACHED_ARGUMENTS:
            self._known.popitem(last=False)
        return public
