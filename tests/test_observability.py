"""Operations: Prometheus metrics after a scripted session, what labels may carry, one trace
from the HTTP request to an activity, one log line per request, liveness and readiness (a real
worker process killed), and the dashboard and alert files of deploy/."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families
from temporalio.client import Client

from mcp_server.http.auth import ANONYMOUS
from mcp_server.observability import metrics, tracing
from mcp_server.observability.logging import REQUEST_LOGGER, JsonFormatter
from mcp_server.runtime.config import Settings
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.temporal_connection import observed_connection
from mcp_server.tools.registry import ToolRegistry
from tests.conftest import Stack, running_stack
from tests.dev_process import MCP_TASKS
from tests.mcp_client import TASKS_AND_ELICITATION, VERSION, McpClient

ROOT = Path(__file__).resolve().parent.parent
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
StackFactory = Callable[..., contextlib.AbstractAsyncContextManager[Stack]]


async def scrape(stack: Stack) -> tuple[str, Samples]:
    response = await stack.http.get(stack.url.replace("/mcp", "/metrics"))
    assert response.status_code == 200, response.text
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return response.text, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def test_metrics_move_with_a_scripted_session(fresh_stack: StackFactory) -> None:
    async with fresh_stack(metrics_refresh_s=0.2) as stack:
        mcp = stack.mcp
        _, before = await scrape(stack)
        asked = await mcp.create_task("request_approval", {"message": "Ship it?"})
        await mcp.wait_status(asked, "input_required", within=10)
        # The background refresh sees the wait (never a request: the gauges are cached).
        deadline = time.monotonic() + 10
        while True:
            _, gauges = await scrape(stack)
            waiting = value(gauges, "mcp_tasks_open_tasks", tool="request_approval",
                            status="input_required")  # fmt: skip
            if waiting >= 1:
                break
            assert time.monotonic() < deadline, "the open-task gauge never counted the wait"
            await asyncio.sleep(0.2)
        answer = {"action": "accept", "content": {"decision": "approve"}}
        assert "error" not in (await mcp.update_task(asked, {"decision": answer})).body
        stopped = await mcp.create_task("multi_step_job", {"require_approval": True})
        assert "error" not in (await mcp.cancel_task(stopped)).body
        bad = await mcp.rpc("tasks/get", {"taskId": 42})
        assert bad.error["code"] == -32602
        refused = 0
        for _ in range(60):  # far faster than the task's pollIntervalMs allows
            reply = await mcp.get_task(asked)
            if "error" in reply.body:
                assert reply.error["code"] == -31000
                refused += 1
        assert refused > 0
        _, after = await scrape(stack)

    requests = "mcp_tasks_requests_total"
    assert moved(before, after, requests, method="tools/call", outcome="ok") == 2
    assert moved(before, after, requests, method="tasks/update", outcome="ok") == 1
    assert moved(before, after, requests, method="tasks/cancel", outcome="ok") == 1
    assert moved(before, after, requests, method="tasks/get", outcome="-32602") == 1
    assert moved(before, after, requests, method="tasks/get", outcome="-31000") == refused
    assert moved(before, after, "mcp_tasks_refusals_total", reason="rate_limit") == refused
    gets = moved(before, after, requests, method="tasks/get", outcome="ok")
    assert gets >= 60 - refused
    latency = "mcp_tasks_request_duration_seconds_count"
    assert moved(before, after, latency, operation="create") == 2
    assert moved(before, after, latency, operation="update") == 1
    assert moved(before, after, latency, operation="cancel") == 1
    assert moved(before, after, latency, operation="get") == gets + refused + 1
    assert moved(before, after, "mcp_tasks_request_duration_seconds_sum", operation="create") > 0
    slowest = "mcp_tasks_request_duration_seconds_bucket"
    assert moved(before, after, slowest, operation="create", le="+Inf") == 2
    assert value(after, "mcp_tasks_input_wait_oldest_seconds", tool="request_approval") >= 0
    assert value(after, "mcp_tasks_visibility_refreshes_total", outcome="ok") >= 1


async def test_labels_never_carry_a_task_id_a_principal_or_an_argument(mcp: McpClient) -> None:
    secret = f"argument-{uuid.uuid4().hex}"
    task_id = await mcp.create_task("multi_step_job", {"name": secret, "steps": 1})
    await mcp.get_task(task_id)
    unknown = f"x/{uuid.uuid4().hex}"
    assert (await mcp.rpc(unknown)).error["code"] == -32601
    stack_url = mcp.url.replace("/mcp", "/metrics")
    text = (await mcp.http.get(stack_url)).text
    for leaked in (task_id, secret, unknown, ANONYMOUS.digest):
        assert leaked not in text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert "mcp-task-" not in json.dumps(sample.labels)
            method = sample.labels.get("method")
            assert method is None or method in metrics.KNOWN_METHODS | {"other", "-"}
    assert 'method="other",outcome="-32601"' in text


@contextlib.contextmanager
def request_lines() -> Iterator[list[logging.LogRecord]]:
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler, logger = Keep(), logging.getLogger(REQUEST_LOGGER)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # the CLI's default level; pytest leaves WARNING
    try:
        yield seen
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def test_a_request_is_one_json_line_and_a_client_mistake_no_traceback(mcp: McpClient) -> None:
    with request_lines() as seen:
        task_id = await mcp.create_task("multi_step_job", {"steps": 1, "step_seconds": 0})
        await mcp.rpc("tasks/get", {"taskId": 42})
    created, mistake = seen
    line = json.loads(JsonFormatter().format(created))
    assert line["method"] == "tools/call" and line["taskId"] == task_id
    assert line["outcome"] == "ok" and line["status"] == 200
    assert line["principal"] == ANONYMOUS.digest and len(line["requestId"]) == 16
    assert isinstance(line["durationMs"], float) and line["logger"] == REQUEST_LOGGER
    assert mistake.exc_info is None and mistake.levelno == logging.INFO
    text = JsonFormatter().format(mistake)
    assert "\n" not in text and json.loads(text)["outcome"] == "-32602"


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
    start = next(s for s in spans if s.name.startswith("StartWorkflow"))
    run = next(s for s in spans if s.name.startswith("RunWorkflow"))
    assert run.parent is not None and run.parent.span_id == start.context.span_id
    assert run.context.trace_id == start.context.trace_id == http.context.trace_id
    joined = [s for s in spans if s.name == "MCP tasks/get"][-1]  # after wait_terminal's
    assert f"{joined.context.trace_id:032x}" == other
    assert joined.parent is not None and f"{joined.parent.span_id:016x}" == parent


class ShortPollTemporal(TemporalDevServer):
    """A dev server whose long polls end after 2 s, so a live worker polls again often and a
    dead one goes stale in seconds rather than a minute."""

    def command(self) -> list[str]:
        return [*super().command(), "--dynamic-config-value",
                'matching.longPollExpirationInterval="2s"']  # fmt: skip


@contextlib.asynccontextmanager
async def short_poll_temporal(tmp_path: Path) -> AsyncIterator[TemporalDevServer]:
    server = ShortPollTemporal(tmp_path / "temporal", port=free_port())
    server.start()
    try:
        await server.wait_ready()
        yield server
    finally:
        server.stop()


async def wait_ready_status(stack: Stack, status: int, within: float) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        response = await stack.http.get(stack.url.replace("/mcp", "/readyz"))
        if response.status_code == status:
            body: dict[str, Any] = response.json()
            return body
        assert time.monotonic() < deadline, (
            f"/readyz stayed {response.status_code}: {response.text}"
        )
        await asyncio.sleep(0.25)


async def test_readyz_turns_503_once_the_only_worker_is_killed(
    tmp_path: Path, registry: ToolRegistry
) -> None:
    async with short_poll_temporal(tmp_path) as temporal:
        client = await Client.connect(temporal.address)
        async with running_stack(client, registry, ready_poller_max_age_s=6) as stack:
            live = await stack.http.get(stack.url.replace("/mcp", "/healthz"))
            assert live.json() == {"status": "ok"}
            await stack.stop_worker()  # the only worker is the process started below
            env = {**os.environ, "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
                   "MCP_TASKS_TASK_QUEUE": stack.settings.task_queue,
                   "MCP_TASKS_TOOLSET": "demo", "MCP_TASKS_LOG_FORMAT": "json"}  # fmt: skip
            worker = await asyncio.create_subprocess_exec(
                MCP_TASKS, "worker", env=env, stderr=subprocess.DEVNULL, start_new_session=True
            )
            try:
                ready = await wait_ready_status(stack, 200, within=60)
                assert ready["missing"] == [] and ready["workers"] >= 1
                worker.send_signal(signal.SIGKILL)
                await worker.wait()
                gone = await wait_ready_status(stack, 503, within=60)
            finally:
                if worker.returncode is None:
                    worker.kill()
                    await worker.wait()
            # Temporal may still list the dead poller; it no longer counts as a worker.
            assert gone["missing"] == ["workers"] and gone["workers"] == 0
            assert gone["temporal"] == "ok" and gone["searchAttributes"] == "ok"
            still_alive = await stack.http.get(stack.url.replace("/mcp", "/healthz"))
            assert still_alive.status_code == 200
            temporal.stop()
            down = await wait_ready_status(stack, 503, within=5)
            assert down["missing"] == ["temporal"] and down["temporal"].startswith("unreachable")
            live = await stack.http.get(stack.url.replace("/mcp", "/healthz"))
            assert live.status_code == 200  # liveness never asks Temporal


def test_the_alert_rules_and_the_dashboard_read_metrics_that_exist() -> None:
    rules = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yml").read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    for group in rules["groups"]:
        assert group["name"] and group["rules"]
    for rule in alerts:
        assert {"alert", "expr", "for", "labels", "annotations"} <= set(rule), rule
        assert rule["labels"]["severity"] in {"page", "ticket"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    names = {rule["alert"] for rule in alerts}
    assert {"McpTasksNoWorkerPolling", "McpTasksWorkflowTaskFailures",
            "McpTasksInputWaitTooOld", "McpTasksWebhookDeliveriesFailing"} <= names  # fmt: skip
    ours = {m.describe()[0].name for m in _defined_metrics()}
    dashboard = json.loads((ROOT / "deploy/grafana/mcp-tasks.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert exprs
    for expr in exprs + [rule["expr"] for rule in alerts]:
        used = [word for word in _metric_words(expr) if word.startswith("mcp_tasks_")]
        for word in used:
            assert _base(word) in ours, (word, expr)
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    assert "alerts.yml" in config["rule_files"][0]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name in ("prometheus", "grafana"):
        service = compose["services"][name]
        assert service["profiles"] == ["observability"]
        assert all(str(port).startswith("127.0.0.1:") for port in service["ports"])


def _defined_metrics() -> list[Any]:
    return [v for v in vars(metrics).values() if hasattr(v, "describe") and hasattr(v, "_name")]


def _metric_words(expr: str) -> list[str]:
    word, words = "", []
    for char in expr + " ":
        if char.isalnum() or char == "_":
            word += char
        else:
            if word:
                words.append(word)
            word = ""
    return words


def _base(name: str) -> str:
    for suffix in ("_bucket", "_count", "_sum", "_total"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


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


def test_the_json_format_merges_an_audit_line_and_keeps_a_traceback_on_one_line() -> None:
    formatter = JsonFormatter()
    audit = logging.LogRecord("mcp_server.protocol.audit", logging.INFO, "", 0,
                              '{"event":"task.create","taskId":"t"}', None, None)  # fmt: skip
    merged = json.loads(formatter.format(audit))
    assert merged["event"] == "task.create" and "message" not in merged
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        crash = logging.LogRecord("x", logging.ERROR, "", 0, "failed", None, sys.exc_info())
    line = formatter.format(crash)
    assert "\n" not in line and "RuntimeError: boom" in json.loads(line)["exception"]
