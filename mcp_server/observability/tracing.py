"""OpenTelemetry traces: off unless configured, and then one trace per request across the HTTP
server, the Temporal client, the workflow and its activities.

- On when `MCP_TASKS_OTLP_ENDPOINT` or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or
  `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: spans go by OTLP/HTTP through a batch processor
  (needs the `otel` extra: opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http).
- With no collector, `OTEL_TRACES_EXPORTER=console` (OpenTelemetry's own variable) writes each
  span to stderr as one JSON object per line, next to the logs (which carry the same
  `trace_id`): a way to see the spans of a request on a laptop or in a container's log.
  `OTEL_TRACES_EXPORTER=none` turns tracing off even with an endpoint set.
- Off otherwise: nothing of the OpenTelemetry SDK is imported, `server_span` returns one shared
  no-op context manager, and the Temporal client gets no tracing interceptor.
- A request joins its client's trace: the W3C `traceparent` (and `tracestate`) HTTP headers,
  else `params._meta.traceparent` (and `_meta.tracestate`); without either it starts a trace.
- Temporal's `TracingInterceptor` (temporalio.contrib.opentelemetry) on the client carries the
  span into the workflow's headers; a worker built on that client traces the workflow and its
  activities under it. The reads it does not see (the raw `DescribeWorkflowExecution` behind
  `tasks/get`) make a client span of their own (tracer.py, `temporal_span`).
- The request span (`MCP <method>`, kind SERVER) carries OpenTelemetry's HTTP server attributes
  (`http.request.method`, `http.route`, `url.path`, `url.scheme`, `http.response.status_code`,
  `user_agent.original`), JSON-RPC's (`rpc.system`, `rpc.method`, `rpc.jsonrpc.error_code`,
  `error.type`) and the task's (`mcp.method.name`, `mcp.task.id`, `gen_ai.tool.name`). Its
  status is ERROR for a fault of the server (HTTP 5xx, -32603), as the HTTP conventions say of
  a server span; a client's mistake keeps it UNSET with its code in `error.type`.
- Export is bounded when the process stops: spans still batched get `SHUTDOWN_EXPORT_S`, then
  the exporter is told to stop, so a collector that is down does not hold a stopping server
  through the exporter's retries (about 10 s by default).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

from temporalio.client import Interceptor

from mcp_server.observability.metrics import method_label
from mcp_server.observability.record import record_of
from mcp_tasks import tracer

log = logging.getLogger("mcp_server.observability.tracing")

_NOOP: AbstractContextManager[None] = contextlib.nullcontext()
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_TRACE_KEYS = ("traceparent", "tracestate")
_provider: Any = None  # its TracerProvider
_exporter: Any = None  # its span exporter, stopped by `shutdown` once the bound has passed
# How long a stopping process waits for its last spans to be exported.
SHUTDOWN_EXPORT_S = 2.0
_SERVER_FAULTS = frozenset({"-32603"})


def endpoint(configured: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """Where spans go: the setting, else OpenTelemetry's own variables; None: tracing off."""
    source = os.environ if env is None else env
    return configured or next((source[v] for v in _ENDPOINT_VARIABLES if source.get(v)), None)


def exporter_kind(env: Mapping[str, str] | None = None) -> str:
    """OTEL_TRACES_EXPORTER: `otlp` (the default), `console` or `none`."""
    source = os.environ if env is None else env
    return source.get("OTEL_TRACES_EXPORTER", "").strip().lower() or "otlp"


def configure(otlp_endpoint: str | None, service_name: str) -> bool:
    """Turn tracing on for this process when an endpoint is configured, or the console
    exporter is asked for; whether it is on."""
    kind = exporter_kind()
    if kind == "none":
        return False
    if kind == "console":
        return _configure_console(service_name)
    target = endpoint(otlp_endpoint)
    if target is None:
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as err:
        raise RuntimeError(
            f"tracing is configured ({target}) but the OpenTelemetry SDK is not installed: "
            "pip install 'mcp-tasks-temporal[otel]'"
        ) from err
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if otlp_endpoint and not os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        exporter = OTLPSpanExporter(endpoint=otlp_endpoint.rstrip("/") + "/v1/traces")
    else:
        exporter = OTLPSpanExporter()  # reads the OTEL_EXPORTER_OTLP_* variables
    stoppable = StopOnce(exporter)
    provider.add_span_processor(BatchSpanProcessor(stoppable))  # type: ignore[arg-type]
    use(provider, stoppable)
    log.info("tracing on: spans exported by OTLP/HTTP to %s", target)
    return True


def _configure_console(service_name: str) -> bool:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    except ImportError as err:
        raise RuntimeError(
            "OTEL_TRACES_EXPORTER=console but the OpenTelemetry SDK is not installed: "
            "pip install 'mcp-tasks-temporal[otel]'"
        ) from err

    def one_line(span: ReadableSpan) -> str:
        return str(span.to_json(indent=None)) + "\n"

    exporter = ConsoleSpanExporter(out=sys.stderr, formatter=one_line)
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use(provider, exporter)
    log.info("tracing on: spans written to stderr, one JSON object per line")
    return True


class StopOnce:
    """A span exporter shut down at most once: by `shutdown`'s bound, or by its processor after
    (which would otherwise log that it was already shut down)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._stopped = False
        self._lock = threading.Lock()

    def export(self, spans: Any) -> Any:
        return self._inner.export(spans)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self._inner.force_flush(timeout_millis))

    def shutdown(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._inner.shutdown()


def use(provider: Any, exporter: Any = None) -> None:
    """Trace with `provider` (an opentelemetry TracerProvider) whose processors export to
    `exporter` (stopped by `shutdown` when it takes too long); None turns tracing off."""
    global _provider, _exporter
    _provider, _exporter = provider, exporter
    tracer.use(None if provider is None else provider.get_tracer("mcp_server"))


def shutdown(bound_s: float = SHUTDOWN_EXPORT_S) -> None:
    """Export the spans still batched, for at most about `bound_s`, and turn tracing off (at
    the process's end). Past the bound the exporter is shut down, which ends its retries."""
    provider, exporter = _provider, _exporter
    use(None)
    if provider is None:
        return
    stop = threading.Timer(bound_s, _stop_exporting, (exporter, bound_s)) if exporter else None
    if stop is not None:
        stop.daemon = True
        stop.start()
    try:
        provider.shutdown()
    finally:
        if stop is not None:
            stop.cancel()


def _stop_exporting(exporter: Any, bound_s: float) -> None:
    log.warning("spans not exported within %.1f s of shutdown: dropped", bound_s)
    exporter.shutdown()


def enabled() -> bool:
    return tracer.current() is not None


def client_interceptors() -> list[Interceptor]:
    """What a Temporal client needs to carry traces (none while tracing is off)."""
    if tracer.current() is None:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(tracer.current())]


def _carrier(headers: Mapping[str, str], message: dict[str, Any]) -> dict[str, str]:
    if headers.get("traceparent"):
        return {key: headers[key] for key in _TRACE_KEYS if headers.get(key)}
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return {}
    return {key: meta[key] for key in _TRACE_KEYS if isinstance(meta.get(key), str)}


def server_span(headers: Mapping[str, str], message: dict[str, Any]) -> AbstractContextManager[Any]:
    """The span of one MCP request, child of the client's span when it sent one."""
    if tracer.current() is None:
        return _NOOP
    return _span(headers, message)


@contextlib.contextmanager
def _span(headers: Mapping[str, str], message: dict[str, Any]) -> Iterator[Any]:
    from opentelemetry import propagate, trace

    method = message.get("method")
    method = method_label(method if isinstance(method, str) else None)
    name = f"MCP {method}"
    parent = propagate.extract(_carrier(headers, message))
    with tracer.current().start_as_current_span(
        name, context=parent, kind=trace.SpanKind.SERVER
    ) as span:
        span.set_attribute("mcp.method", method)
        span.set_attributes(
            {"mcp.method.name": method, "rpc.system": "jsonrpc", "rpc.method": method}
        )
        yield span


def annotate(span: Any, request: Any, status: int, message: dict[str, Any]) -> None:
    """What the request span learns once the answer is known: the HTTP attributes, the task
    and tool, the JSON-RPC error code and the status (a starlette `request`)."""
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    record = record_of(request)
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    attributes: dict[str, Any] = {
        "http.request.method": request.method,
        "http.route": request.url.path,
        "url.path": request.url.path,
        "url.scheme": request.url.scheme,
        "http.response.status_code": status,
    }
    if agent := request.headers.get("user-agent"):
        attributes["user_agent.original"] = agent[:256]
    task_id = record.task_id if record is not None else params.get("taskId")
    if isinstance(task_id, str):
        attributes["mcp.task.id"] = task_id
    if message.get("method") == "tools/call" and isinstance(params.get("name"), str):
        attributes["gen_ai.tool.name"] = params["name"][:128]
    outcome = record.outcome if record is not None else None
    if outcome is not None and outcome.lstrip("-").isdigit():
        attributes["rpc.jsonrpc.error_code"] = int(outcome)
        attributes["error.type"] = outcome
    elif status >= 400:
        attributes["error.type"] = str(status)
    span.set_attributes(attributes)
    if record is not None:
        context = span.get_span_context()
        record.trace_id, record.span_id = f"{context.trace_id:032x}", f"{context.span_id:016x}"
    if status >= 500 or outcome in _SERVER_FAULTS:
        span.set_status(Status(StatusCode.ERROR, f"{outcome or status}"))


def operator_span(operation: str, task_id: str) -> AbstractContextManager[Any]:
    """The span of an operator CLI action on a task (`mcp-tasks <operation>`), kind CLIENT:
    the side door traced as the server's requests are. A no-op while tracing is off."""
    current = tracer.current()
    if current is None:
        return _NOOP
    return _operator_span(current, operation, task_id)


@contextlib.contextmanager
def _operator_span(current: Any, operation: str, task_id: str) -> Iterator[Any]:
    from opentelemetry import trace

    with current.start_as_current_span(
        f"mcp-tasks {operation}", kind=trace.SpanKind.CLIENT
    ) as span:
        span.set_attributes({"mcp.task.id": task_id, "mcp.operator": True})
        yield span
