"""The server's Temporal calls, observed through a client interceptor: every start, describe,
signal, cancel, count, query and update of the task store passes here.

- `mcp_tasks_temporal_request_duration_seconds{operation}`: the Temporal client latency of the
  process, failed calls included, on the server's own /metrics (so a standalone `server`
  reports it without the Temporal SDK's exporter).
- `mcp_tasks_temporal_rpc_errors_total{operation, code}`: the calls that failed, by gRPC
  status. NOT_FOUND is not counted: it is the ordinary answer for a task that does not exist
  (or has closed).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from prometheus_client import Counter, Histogram
from temporalio.client import (
    CancelWorkflowInput,
    CountWorkflowsInput,
    DescribeWorkflowInput,
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowInput,
    StartWorkflowUpdateInput,
    WorkflowExecutionCount,
    WorkflowExecutionDescription,
    WorkflowHandle,
    WorkflowUpdateHandle,
)
from temporalio.service import RPCError, RPCStatusCode

# Defined here, where the task layer's raw calls count them too; listed with the server's other
# metrics in observability/metrics.py.
TEMPORAL_RPC_ERRORS = Counter(
    "mcp_tasks_temporal_rpc_errors",
    "Temporal calls of the server that failed, by operation and gRPC status",
    ["operation", "code"],
)
# Buckets from 1 ms to 10 min, shared by every latency histogram of the server: a get is
# milliseconds, an attached tools/call up to 45 s, a listen stream is measured to its first byte.
LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    600.0,
)
TEMPORAL_REQUEST_LATENCY = Histogram(
    "mcp_tasks_temporal_request_duration_seconds",
    "Time of the server's Temporal calls (Temporal client latency), by operation, failed or not",
    ["operation"],
    buckets=LATENCY_BUCKETS,
)

T = TypeVar("T")


def count_rpc_error(operation: str, err: RPCError) -> None:
    if err.status != RPCStatusCode.NOT_FOUND:
        TEMPORAL_RPC_ERRORS.labels(operation, err.status.name).inc()


async def observed(operation: str, call: Callable[[], Awaitable[T]]) -> T:
    """`call()`, timed, and counted when it fails with a gRPC status."""
    started = time.perf_counter()
    try:
        return await call()
    except RPCError as err:
        count_rpc_error(operation, err)
        raise
    finally:
        TEMPORAL_REQUEST_LATENCY.labels(operation).observe(time.perf_counter() - started)


class TemporalCallMetrics(Interceptor):
    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Outbound(next)


class _Outbound(OutboundInterceptor):
    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        return await observed("start_workflow", lambda: self.next.start_workflow(input))

    async def describe_workflow(self, input: DescribeWorkflowInput) -> WorkflowExecutionDescription:
        return await observed("describe_workflow", lambda: self.next.describe_workflow(input))

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        await observed("signal_workflow", lambda: self.next.signal_workflow(input))

    async def cancel_workflow(self, input: CancelWorkflowInput) -> None:
        await observed("cancel_workflow", lambda: self.next.cancel_workflow(input))

    async def count_workflows(self, input: CountWorkflowsInput) -> WorkflowExecutionCount:
        return await observed("count_workflows", lambda: self.next.count_workflows(input))

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        return await observed("query_workflow", lambda: self.next.query_workflow(input))

    async def start_workflow_update(
        self, input: StartWorkflowUpdateInput
    ) -> WorkflowUpdateHandle[Any]:
        return await observed(
            "start_workflow_update", lambda: self.next.start_workflow_update(input)
        )
