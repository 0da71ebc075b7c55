"""One `DescribeWorkflowExecution` call, and only what the task store reads of it.

`WorkflowHandle.describe()` turns the whole response into Python objects before returning:
every search attribute twice (typed and untyped), every timestamp, the memo's payloads. The
store reads the status, the run, the history length, the close time, one memo key and the
raw pending workflow task and activities. Decoding all of it was a fifth of the server's CPU
in a `tasks/get` (py-spy of `make bench`'s get phase); `Description` decodes what is read, when
it is read. The memo key goes through the client's data converter, codec included, as
`memo_value` would.

The call is the same RPC the SDK makes (retried by the SDK's client, the same timeout), and a
failure is counted in `mcp_tasks_temporal_rpc_errors_total` as the client interceptor counts the
others (tasks/temporal_errors.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import (
    DescribeWorkflowExecutionRequest,
    DescribeWorkflowExecutionResponse,
)
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.converter import DataConverter, WorkflowSerializationContext
from temporalio.service import RPCError

from mcp_server.tasks.temporal_errors import count_rpc_error
from mcp_tasks.tracer import temporal_span


@dataclass(frozen=True)
class Description:
    """A workflow's description, read lazily from the raw response."""

    raw_description: DescribeWorkflowExecutionResponse
    converter: DataConverter

    @property
    def status(self) -> WorkflowExecutionStatus | None:
        status = self.raw_description.workflow_execution_info.status
        return WorkflowExecutionStatus(status) if status else None

    @property
    def run_id(self) -> str:
        return self.raw_description.workflow_execution_info.execution.run_id

    @property
    def history_length(self) -> int:
        return self.raw_description.workflow_execution_info.history_length

    @property
    def close_time(self) -> datetime | None:
        info = self.raw_description.workflow_execution_info
        return info.close_time.ToDatetime(tzinfo=UTC) if info.HasField("close_time") else None

    async def memo_value(self, key: str, default: Any = None) -> Any:
        payload = self.raw_description.workflow_execution_info.memo.fields.get(key)
        if payload is None:
            return default
        return (await self.converter.decode([payload]))[0]


async def describe(client: Client, workflow_id: str, rpc_timeout: timedelta) -> Description:
    """The workflow's description; RPCError as the SDK raises it (NOT_FOUND included)."""
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
    )
    try:
        with temporal_span("DescribeWorkflowExecution", workflow_id):
            raw = await client.workflow_service.describe_workflow_execution(
                request, retry=True, timeout=rpc_timeout
            )
    except RPCError as err:
        count_rpc_error("describe_workflow", err)
        raise
    context = WorkflowSerializationContext(namespace=client.namespace, workflow_id=workflow_id)
    return Description(raw, client.data_converter.with_context(context))
