"""The floor: the same Temporal operations as the server's, through the raw `temporalio` client
on the same Temporal, with nothing of this project in between.

A raw start is the server's start of a task, done by hand: the tool's TaskWorkflow type, a
TaskInput built as tools/call builds it (the tool's TTL and pollIntervalMs from the same
registry, a fresh taskId), on the server's task queue, with the same memo, search attributes,
execution timeout and ID policies; so the worker runs it exactly like a task of the server.
Its owner is `RAW_OWNER`, a principal no client has: no quota slot is reserved for it (the
quota is the server's own cost).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, cast

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.common import (
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)

from bench.floor_stack import MODULES
from bench.run import META
from mcp_server.protocol.frame.wire import iso_now
from mcp_server.tasks.store import INITIAL_STATUS_MESSAGE, initial_search_attributes, new_task_id
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.contracts.task_state import (
    MEMO_KEY,
    TaskInput,
    TaskState,
)

RAW_OWNER = "bench-raw-floor"
# What the benchmark clients declare, as tools/call hands it to a 2026-07-28 task.
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
TASK_QUEUE = "mcp-tasks"  # the default task queue of server and worker
# Longer than Temporal's own long-poll timeout (20 s), which then answers with no events.
LONG_POLL_TIMEOUT = timedelta(seconds=30)


def completed(result: dict[str, Any]) -> str:
    """`completed:LABEL`, the label of a `slow_compute` or the name of a job."""
    content = result.get("structuredContent") or {}
    return f"completed:{content.get('label') or content.get('name') or ''}"


class RawFloor:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.registry = load_toolsets("conformance", MODULES)

    @classmethod
    async def connect(cls, address: str) -> RawFloor:
        return cls(await Client.connect(address, namespace="default"))

    def task_input(self, tool_name: str, arguments: dict[str, Any]) -> tuple[TaskInput, str]:
        """What tools/call would hand the workflow, and the workflow type."""
        tool = self.registry.get(tool_name)
        assert tool is not None and tool.workflow is not None, tool_name
        task = TaskInput(
            task_id=new_task_id(),
            tool=tool.name,
            arguments=arguments,
            created_at=iso_now(),
            ttl_ms=tool.ttl_ms,
            poll_interval_ms=tool.poll_interval_ms,
            owner=RAW_OWNER,
            client_capabilities=cast(dict[str, Any], META[CAPABILITIES]),
            tool_config=tool.workflow_config,
        )
        return task, tool.workflow

    async def start(self, tool_name: str, arguments: dict[str, Any]) -> WorkflowHandle[Any, Any]:
        task, workflow = self.task_input(tool_name, arguments)
        return await self.client.start_workflow(
            workflow,
            task,
            id=task.task_id,
            task_queue=TASK_QUEUE,
            memo={MEMO_KEY: TaskState.initial(task, INITIAL_STATUS_MESSAGE).to_memo()},
            search_attributes=initial_search_attributes(task),
            execution_timeout=timedelta(milliseconds=task.ttl_ms) if task.ttl_ms else None,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            static_summary=f"MCP tool {task.tool}",
        )

    async def describe(self, task_id: str) -> WorkflowExecutionDescription:
        return await self.client.get_workflow_handle(task_id).describe()

    async def long_poll(self, task_id: str, cursor: bytes) -> tuple[int, bytes]:
        """One history long-poll (`wait_new_event`): the events after `cursor`, as soon as
        there are any (at once for b"", the history so far); their count and the next cursor."""
        request = GetWorkflowExecutionHistoryRequest(
            namespace=self.client.namespace,
            execution=WorkflowExecution(workflow_id=task_id),
            next_page_token=cursor,
            wait_new_event=True,
        )
        response = await self.client.workflow_service.get_workflow_execution_history(
            request, timeout=LONG_POLL_TIMEOUT
        )
        return len(response.history.events), response.next_page_token

    async def status_message(self, task_id: str) -> str:
        """The statusMessage the workflow last put in its memo ("" before its first run)."""
        state = await self.state(task_id)
        return (state.status_message or "") if state else ""

    async def status(self, task_id: str) -> str:
        """The task status the workflow last put in its memo ("" before its first run)."""
        state = await self.state(task_id)
        return str(state.status) if state else ""

    async def state(self, task_id: str) -> TaskState | None:
        """The task state the workflow last put in its memo (None before its first run)."""
        description = await self.describe(task_id)
        return TaskState.from_memo(await description.memo_value(MEMO_KEY, None))

    async def poll_to_end(self, handle: WorkflowHandle[Any, Any], every_s: float) -> str:
        """describe() every `every_s` until the execution is closed, then its outcome as a
        task status (a completed one's result read, as tasks/get reads it)."""
        while True:
            await asyncio.sleep(every_s)
            status = (await self.describe(handle.id)).status
            if status != WorkflowExecutionStatus.RUNNING:
                return await self.outcome(handle)

    @staticmethod
    async def outcome(handle: WorkflowHandle[Any, Any]) -> str:
        """Waits for the result (Temporal's long-poll: the push floor); completed, cancelled
        or failed, with the result's label when it has one (`completed:LABEL`)."""
        try:
            result = await handle.result()
        except WorkflowFailureError as err:
            cause = type(err.cause).__name__
            return "cancelled" if cause == "CancelledError" else f"failed:{cause}"
        return completed(result if isinstance(result, dict) else {})
