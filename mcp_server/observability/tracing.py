"""OpenTelemetry traces: off unless configured, and then one trace per request across the HTTP
server, the Temporal client, the workflow and its activities.

- On when `MCP_TASKS_OTLP_ENDPOINT` or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or
  `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: spans go by OTLP/HTTP through a batch processor
  (needs the `otel` extra: opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http).
- Off otherwise: nothing of the OpenTelemetry SDK is imported, `server_span` returns one shared
  no-op context manager, and the Temporal client gets no tracing interceptor.
- A request joins its client's trace: the W3C `traceparent` (and `tracestate`) HTTP headers,
  else `params._meta.traceparent` (and `_meta.tracestate`); without either it starts a trace.
- Temporal's `TracingInterceptor` (temporalio.contrib.opentelemetry) on the client carries the
  span into the workflow's headers; a worker built on that client traces the workflow and its
  activities under it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

from temporalio.client import Interceptor

from mcp_server.observability.metrics import method_label

log = logging.getLogger("mcp_server.observability.tracing")

_NOOP: AbstractContextManager[None] = contextlib.nullcontext()
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_TRACE_KEYS = ("traceparent", "tracestate")
_tracer: Any = None  # an opentelemetry.trace.Tracer while tracing is on
_provider: Any = None  # its TracerProvider


def endpoint(configured: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """Where spans go: the setting, else OpenTelemetry's own variables; None: tracing off."""
    source = os.environ if env is None else env
    return configured or next((source[v] for v in _ENDPOINT_VARIABLES if source.get(v)), None)


def configure(otlp_endpoint: str | None, service_name: str) -> bool:
    """Turn tracing on for this process when an endpoint is configured; whether it is on."""
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
    provider.add_span_processor(BatchSpanProcessor(exporter))
    use(provider)
    log.info("tracing on: spans exported by OTLP/HTTP to %s", target)
    return True


def use(provider: Any) -> None:
    """Trace with `provider` (an opentelemetry TracerProvider); None turns tracing off."""
    global _tracer, _provider
    _provider = provider
    _tracer = None if provider is None else provider.get_tracer("mcp_server")


def shutdown() -> None:
    """Export the spans still batched and turn tracing off (at the process's end)."""
    provider = _provider
    use(None)
    if provider is not None:
        provider.shutdown()


def enabled() -> bool:
    return _tracer is not None


def client_interceptors() -> list[Interceptor]:
    """What a Temporal client needs to carry traces (none while tracing is off)."""
    if _tracer is None:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(_tracer)]


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
    if _tracer is None:
        return _NOOP
    return _span(headers, message)


@contextlib.contextmanager
def _span(headers: Mapping[str, str], message: dict[str, Any]) -> Iterator[Any]:
    from opentelemetry import propagate, trace

    method = message.get("method")
    method = method_label(method if isinstance(method, str) else None)
    name = f"MCP {method}"
    parent = propagate.extract(_carrier(headers, message))
    with _tracer.start_as_current_span(name, context=parent, kind=trace.SpanKind.SERVER) as span:
        span.set_attribute("mcp.method", method)
        yield span
