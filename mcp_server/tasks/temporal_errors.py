"""Counts the server's Temporal calls that fail (`mcp_tasks_temporal_rpc_errors_total`), by
operation and gRPC status, through a client interceptor: every start, describe, signal, cancel
and count of the task store passes here. NOT_FOUND is not counted: it is the ordinary answer
for a task that does not exist (or has closed)."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter
from temporalio.client import (
    CancelWorkflowInput,
    CountWorkflowsInput,
    DescribeWorkflowInput,
    Interceptor,
    OutboundInterceptor,
    SignalWorkflowInput,
    StartWorkflowInput,
    WorkflowExecutionCount,
    WorkflowExecutionDescription,
    WorkflowHandle,
)
from temporalio.service import RPCError, RPCStatusCode

TEMPORAL_RPC_ERRORS = Counter(
    "mcp_tasks_temporal_rpc_errors",
    "Temporal calls of the server that failed, by operation and gRPC status",
    ["operation", "code"],
)


def count_rpc_error(operation: str, err: RPCError) -> None:
    if err.status != RPCStatusCode.NOT_FOUND:
        TEMPORAL_RPC_ERRORS.labels(operation, err.status.name).inc()


class RpcErrorCounter(Interceptor):
    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Outbound(next)


class _Outbound(OutboundInterceptor):
    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        try:
            return await self.next.start_workflow(input)
        except RPCError as err:
            count_rpc_error("start_workflow", err)
            raise

    async def describe_workflow(self, input: DescribeWorkflowInput) -> WorkflowExecutionDescription:
        try:
            return await self.next.describe_workflow(input)
        except RPCError as err:
            count_rpc_error("describe_workflow", err)
            raise

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        try:
            await self.next.signal_workflow(input)
        except RPCError as err:
            count_rpc_error("signal_workflow", err)
            raise

    async def cancel_workflow(self, input: CancelWorkflowInput) -> None:
        try:
            await self.next.cancel_workflow(input)
        except RPCError as err:
            count_rpc_error("cancel_workflow", err)
            raise

    async def count_workflows(self, input: CountWorkflowsInput) -> WorkflowExecutionCount:
        try:
            return await self.next.count_workflows(input)
        except RPCError as err:
            count_rpc_error("count_workflows", err)
            raise
