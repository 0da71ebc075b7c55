"""The process's OpenTelemetry tracer while tracing is on (tracing.py sets it), and the client
span of a Temporal call the SDK's interceptor does not see.

It imports nothing of this project, so the tasks layer may make a span around its raw
Temporal service calls (`DescribeWorkflowExecution` and the history read behind `tasks/get`);
while tracing is off `temporal_span` returns one shared no-op context manager.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

_NOOP: AbstractContextManager[None] = contextlib.nullcontext()
_TEMPORAL_SERVICE = "temporal.api.workflowservice.v1.WorkflowService"
_current: list[Any] = [None]  # an opentelemetry.trace.Tracer while tracing is on


def current() -> Any:
    """The tracer, or None while tracing is off."""
    return _current[0]


def use(tracer: Any) -> None:
    _current[0] = tracer


def temporal_span(method: str, task_id: str) -> AbstractContextManager[Any]:
    """A CLIENT span `temporal <method>` around one raw Temporal service call."""
    if _current[0] is None:
        return _NOOP
    return _temporal_span(_current[0], method, task_id)


@contextlib.contextmanager
def _temporal_span(tracer: Any, method: str, task_id: str) -> Iterator[Any]:
    from opentelemetry import trace

    with tracer.start_as_current_span(f"temporal {method}", kind=trace.SpanKind.CLIENT) as span:
        span.set_attributes(
            {
                "rpc.system": "grpc",
                "rpc.service": _TEMPORAL_SERVICE,
                "rpc.method": method,
                "mcp.task.id": task_id,
            }
        )
        yield span
