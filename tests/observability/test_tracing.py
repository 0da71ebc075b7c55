"""Traces: one trace from the HTTP request through the workflow to an activity, joined to the
client's traceparent, with the Temporal reads behind tasks/get as spans of their own; the
request span's attributes and status (in process: they are the transport's); off without an
endpoint; exported by OTLP/HTTP when configured, and within a bound when the process stops
while the collector is down."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from temporalio.client import Client

from mcp_server.observability import tracing
from mcp_server.runtime.devserver import TemporalDevServer
from mcp_server.tasks.errors import BackendUnavailable
from mcp_server.temporal.connection import observed_connection
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings
from tests.asgi_stack import AsgiStackFactory
from tests.conftest import running_stack
from tests.mcp_client import TASKS_AND_ELICITATION, VERSION
from workflows.quota import QUOTA_WORKFLOW


async def test_one_trace_runs_from_the_http_request_through_the_workflow_to_an_activity(
    temporal: TemporalDevServer, registry: ToolRegistry
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    try:
        client = await Client.connect(temporal.address, **observed_connection(Settings()))
        async with running_stack(client, registry) as stack:
            trace_id = uuid.uuid4().hex
            parent = uuid.uuid4().hex[:16]
            headers = {"traceparent": f"00-{trace_id}-{parent}-01"}
            created = await stack.mcp.call_tool(
                "multi_step_job", {"steps": 1, "step_seconds": 0}, headers=headers
            )
            task_id = created.result["taskId"]
            await stack.mcp.wait_terminal(task_id, within=20)
            other = uuid.uuid4().hex
            meta = {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": TASKS_AND_ELICITATION,
                "traceparent": f"00-{other}-{parent}-01",
            }
            await stack.mcp.rpc("tasks/get", {"taskId": task_id}, meta=meta)
            deadline = time.monotonic() + 10
            while not any(s.name.startswith("RunActivity") for s in exporter.get_finished_spans()):
                assert time.monotonic() < deadline, "no activity span"
                await asyncio.sleep(0.1)
    finally:
        tracing.use(None)
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span for span in spans}

    def parent_chain(span: ReadableSpan) -> list[str]:
        chain = [span.name]
        while span.parent is not None and span.parent.span_id in by_id:
            span = by_id[span.parent.span_id]
            chain.append(span.name)
        return chain

    http = next(s for s in spans if s.name == "MCP tools/call")
    assert f"{http.context.trace_id:032x}" == trace_id
    assert http.parent is not None and f"{http.parent.span_id:016x}" == parent
    activity = next(s for s in spans if s.name.startswith("RunActivity"))
    assert f"{activity.context.trace_id:032x}" == trace_id
    chain = parent_chain(activity)
    assert chain[-1] == "MCP tools/call", chain
    assert any(name.startswith("StartWorkflow") for name in chain), chain
    assert any(name.startswith("StartActivity") for name in chain), chain  # the workflow's
    # The task's run, not the open-task quota workflow's (QUOTA_WORKFLOW), which the same
    # request starts first to reserve the task's slot.
    run = next(
        s for s in spans if s.name.startswith("RunWorkflow") and QUOTA_WORKFLOW not in s.name
    )
    assert run.parent is not None and run.parent.span_id in by_id
    start = by_id[run.parent.span_id]
    assert start.name.startswith("StartWorkflow") and QUOTA_WORKFLOW not in start.name, start.name
    assert run.context.trace_id == start.context.trace_id == http.context.trace_id
    joined = [s for s in spans if s.name == "MCP tasks/get"][-1]  # after wait_terminal's
    assert f"{joined.context.trace_id:032x}" == other
    assert joined.parent is not None and f"{joined.parent.span_id:016x}" == parent
    # The polls of wait_terminal read Temporal (the last, of a closed task, reads a cache).
    gets = {s.context.span_id for s in spans if s.name == "MCP tasks/get"}
    describe = next(
        s
        for s in spans
        if s.name == "temporal DescribeWorkflowExecution" and s.parent and s.parent.span_id in gets
    )
    assert describe.kind == SpanKind.CLIENT and describe.attributes is not None
    assert describe.attributes["mcp.task.id"] == task_id
    assert http.attributes is not None and http.attributes["mcp.task.id"] == task_id
    assert http.attributes["gen_ai.tool.name"] == "multi_step_job"


def test_tracing_is_off_and_costs_nothing_without_an_endpoint() -> None:
    assert tracing.endpoint(None, {}) is None
    assert tracing.endpoint(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) == (
        "http://c:4318"
    )
    assert not tracing.enabled() and tracing.client_interceptors() == []
    assert tracing.server_span({}, {}) is tracing.server_span({"traceparent": "x"}, {})


def test_spans_go_to_the_configured_otlp_endpoint() -> None:
    received: list[tuple[str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    collector = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{collector.server_port}"
        assert tracing.configure(endpoint, "mcp-tasks-test")
        assert tracing.client_interceptors()
        trace_id = uuid.uuid4().hex
        headers = {"traceparent": f"00-{trace_id}-{uuid.uuid4().hex[:16]}-01"}
        with tracing.server_span(headers, {"method": "tools/list"}):
            pass
        tracing.shutdown()  # flushes the batch
    finally:
        tracing.use(None)
        collector.shutdown()
        collector.server_close()
    assert [path for path, _ in received] == ["/v1/traces"]
    exported = ExportTraceServiceRequest.FromString(received[0][1])
    spans = [s for r in exported.resource_spans for ss in r.scope_spans for s in ss.spans]
    assert [(s.name, s.trace_id.hex()) for s in spans] == [("MCP tools/list", trace_id)]
    assert not tracing.enabled()


def test_with_no_collector_the_console_exporter_writes_one_json_span_per_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    try:
        assert tracing.configure(None, "mcp-tasks-test")  # no endpoint needed
        trace_id = uuid.uuid4().hex
        headers = {"traceparent": f"00-{trace_id}-{uuid.uuid4().hex[:16]}-01"}
        with tracing.server_span(headers, {"method": "tools/list"}):
            pass
        tracing.shutdown()
    finally:
        tracing.use(None)
    written = capsys.readouterr()
    spans = [json.loads(line) for line in written.err.splitlines() if line.startswith("{")]
    assert [(s["name"], s["context"]["trace_id"]) for s in spans] == [
        ("MCP tools/list", f"0x{trace_id}")
    ]
    assert written.out == ""  # stdout stays the program's
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert not tracing.configure("http://127.0.0.1:1", "mcp-tasks-test")


@contextlib.contextmanager
def in_memory_spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    try:
        yield exporter
    finally:
        tracing.use(None)


async def test_the_request_span_names_the_task_the_tool_and_the_http_exchange(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    with in_memory_spans() as exporter:
        async with fresh_asgi_stack() as stack:
            created = await stack.mcp.call_tool(
                "multi_step_job",
                {"steps": 1, "step_seconds": 0},
                headers={"User-Agent": "probe/1.0"},
            )
            await stack.mcp.rpc("tasks/get", {"taskId": "mcp-task-" + "0" * 32})
    call, missing = [s for s in exporter.get_finished_spans() if s.name.startswith("MCP ")]
    assert call.name == "MCP tools/call" and call.kind == SpanKind.SERVER
    assert call.attributes is not None and missing.attributes is not None
    assert {
        k: call.attributes[k]
        for k in (
            "http.request.method",
            "url.path",
            "http.response.status_code",
            "user_agent.original",
            "mcp.method.name",
            "rpc.system",
            "mcp.task.id",
            "gen_ai.tool.name",
        )
    } == {
        "http.request.method": "POST",
        "url.path": "/mcp",
        "http.response.status_code": 200,
        "user_agent.original": "probe/1.0",
        "mcp.method.name": "tools/call",
        "rpc.system": "jsonrpc",
        "mcp.task.id": created.result["taskId"],
        "gen_ai.tool.name": "multi_step_job",
    }
    assert call.status.status_code == StatusCode.UNSET
    # A client's mistake: its code on the span, the status left to the server's own faults.
    assert missing.attributes["rpc.jsonrpc.error_code"] == -32602
    assert missing.attributes["error.type"] == "-32602"
    assert missing.attributes["http.response.status_code"] == 400
    assert missing.status.status_code == StatusCode.UNSET


async def test_a_fault_of_the_server_sets_the_request_span_status_to_error(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    async def unavailable(*args: Any, **kwargs: Any) -> None:
        raise BackendUnavailable("temporal", "connection refused")

    with in_memory_spans() as exporter:
        async with fresh_asgi_stack() as stack:
            stack.store.get = unavailable  # type: ignore[method-assign]
            reply = await stack.mcp.rpc("tasks/get", {"taskId": "mcp-task-" + "1" * 32})
    assert reply.status == 503
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "MCP tasks/get"]
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes is not None and span.attributes["error.type"] == "-32603"
    assert span.attributes["http.response.status_code"] == 503


class _CollectorDown(SpanExporter):
    """An exporter whose export waits as the OTLP exporter's retries wait for a collector
    that is down: until it is shut down, or for 20 s (less than the 30 s the batch processor
    waits for its thread before it shuts the exporter down: without the bound, the export gives
    up on its own first)."""

    def __init__(self) -> None:
        self.exporting = threading.Event()
        self.stopped = threading.Event()
        self.aborted_by_shutdown: bool | None = None

    def export(self, spans: Any) -> SpanExportResult:
        self.exporting.set()
        self.aborted_by_shutdown = self.stopped.wait(20)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.stopped.set()


def test_a_stopping_process_stops_exporting_to_a_collector_that_is_down() -> None:
    exporter = _CollectorDown()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracing.use(provider, exporter)
    with tracing.server_span({}, {"method": "tools/list"}):
        pass
    tracing.shutdown(bound_s=0.2)  # the batch is exported now, and hangs
    assert exporter.exporting.is_set()
    # Shut down while its export still waited (the bound ended the wait, not the export).
    assert exporter.aborted_by_shutdown is True
    assert not tracing.enabled()
