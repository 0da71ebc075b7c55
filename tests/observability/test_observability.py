"""Operations: Prometheus metrics after a scripted session, what labels may carry, one log
line per request, and the dashboard and alert files of deploy/."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from temporalio.client import Client
from temporalio.service import RPCError

from mcp_server.observability import metrics
from mcp_server.runtime.devserver import TemporalDevServer
from mcp_server.temporal.connection import observed_connection
from mcp_tasks.identity import ANONYMOUS
from mcp_tasks.logging import REQUEST_LOGGER, JsonFormatter, request_line, sample_reads
from mcp_tasks.settings import Settings
from tests.conftest import Stack, StackFactory
from tests.mcp_client import McpClient

ROOT = Path(__file__).resolve().parents[2]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


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
    async with fresh_stack(
        metrics_refresh_s=0.2, input_wait_threshold_s=0.5, stalled_after_s=1
    ) as stack:
        mcp = stack.mcp
        _, before = await scrape(stack)
        asked = await mcp.create_task("request_approval", {"message": "Ship it?"})
        stuck = await mcp.create_task("tests_wait_forever")  # working, never a change
        await mcp.wait_status(asked, "input_required", within=10)
        # The background refresh sees the wait, then it is older than the threshold, and the
        # task that never changes is stalled (never a request: the gauges are cached).
        deadline = time.monotonic() + 15
        while True:
            _, gauges = await scrape(stack)
            waiting = value(
                gauges, "mcp_tasks_open_tasks", tool="request_approval", status="input_required"
            )
            late = value(gauges, "mcp_tasks_input_waits_over_threshold", tool="request_approval")
            stalled = value(gauges, "mcp_tasks_stalled_tasks", tool="tests_wait_forever")
            if waiting >= 1 and late >= 1 and stalled >= 1:
                break
            assert time.monotonic() < deadline, (waiting, late, stalled)
            await asyncio.sleep(0.2)
        assert "error" not in (await mcp.cancel_task(stuck)).body
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
    assert moved(before, after, requests, method="tools/call", outcome="ok") == 3
    assert moved(before, after, requests, method="tasks/update", outcome="ok") == 1
    assert moved(before, after, requests, method="tasks/cancel", outcome="ok") == 2
    assert moved(before, after, requests, method="tasks/get", outcome="-32602") == 1
    assert moved(before, after, requests, method="tasks/get", outcome="-31000") == refused
    assert moved(before, after, "mcp_tasks_refusals_total", reason="rate_limit") == refused
    gets = moved(before, after, requests, method="tasks/get", outcome="ok")
    assert gets >= 60 - refused
    latency = "mcp_tasks_request_duration_seconds_count"
    assert moved(before, after, latency, operation="create") == 3
    assert moved(before, after, latency, operation="update") == 1
    assert moved(before, after, latency, operation="cancel") == 2
    assert moved(before, after, latency, operation="get") == gets + refused + 1
    assert moved(before, after, "mcp_tasks_request_duration_seconds_sum", operation="create") > 0
    slowest = "mcp_tasks_request_duration_seconds_bucket"
    assert moved(before, after, slowest, operation="create", le="+Inf") == 3
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


async def test_labelled_counters_are_exported_at_zero_before_their_first_event(
    mcp: McpClient,
) -> None:
    text = (await mcp.http.get(mcp.url.replace("/mcp", "/metrics"))).text
    series = {
        (s.name, frozenset(s.labels.items()))
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }
    for reason in ("quota", "rate_limit", "unauthenticated", "forbidden", "body_too_large"):
        assert ("mcp_tasks_refusals_total", frozenset({("reason", reason)})) in series
    for operation in metrics.TEMPORAL_OPERATIONS:
        for code in metrics.OUTAGE_CODES:
            labels = frozenset({("operation", operation), ("code", code)})
            assert ("mcp_tasks_temporal_rpc_errors_total", labels) in series
    for method in metrics.KNOWN_METHODS:
        labels = frozenset({("method", method), ("outcome", "-32603")})
        assert ("mcp_tasks_requests_total", labels) in series


async def test_the_servers_temporal_calls_are_timed_and_a_not_found_is_no_error(
    temporal: TemporalDevServer,
) -> None:
    # The client of `mcp-tasks server` (observed_connection), on a real dev server: the
    # latency is on the server's own /metrics, with no Temporal SDK exporter configured.
    client = await Client.connect(temporal.address, **observed_connection(Settings()))
    latency = "mcp_tasks_temporal_request_duration_seconds_count"

    def seen(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    counted, described = (
        seen(latency, operation="count_workflows"),
        seen(latency, operation="describe_workflow"),
    )
    errors = seen(
        "mcp_tasks_temporal_rpc_errors_total", operation="describe_workflow", code="NOT_FOUND"
    )
    await client.count_workflows('WorkflowType="nothing-here"')
    with pytest.raises(RPCError):
        await client.get_workflow_handle(f"mcp-task-{uuid.uuid4().hex}").describe()
    assert seen(latency, operation="count_workflows") == counted + 1
    assert seen(latency, operation="describe_workflow") == described + 1
    assert (
        seen("mcp_tasks_temporal_rpc_errors_total", operation="describe_workflow", code="NOT_FOUND")
        == errors
        == 0
    )


def test_a_background_gauge_is_absent_until_it_has_a_value() -> None:
    # What a scrape right after a restart shows: no `workers_polling 0` that reads as "no
    # worker", no refresh time of 0 (1970); the gauge appears with its first value.
    gauge = metrics.LateGauge(f"tests_late_{uuid.uuid4().hex}", "a gauge of this test")
    try:
        assert list(gauge.collect()) == []
        gauge.set(0)
        (family,) = gauge.collect()
        assert [sample.value for sample in family.samples] == [0]
    finally:
        REGISTRY.unregister(gauge)
    assert isinstance(metrics.WORKERS_POLLING, metrics.LateGauge)
    assert isinstance(metrics.VISIBILITY_REFRESHED_AT, metrics.LateGauge)


@contextlib.contextmanager
def request_lines() -> Iterator[list[logging.LogRecord]]:
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            # A copy as emitted: a root handler that a test of this process configured keys the
            # principal of the same record object afterwards (mcp_tasks.logging.KeyedPrincipals).
            kept = logging.makeLogRecord(record.__dict__)
            if isinstance(fields := getattr(record, "fields", None), dict):
                kept.fields = dict(fields)
            seen.append(kept)

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


def test_the_alert_rules_and_the_dashboard_read_metrics_that_exist() -> None:
    rules = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yml").read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    for group in rules["groups"]:
        assert group["name"] and group["rules"]
    for rule in alerts:
        assert {"alert", "expr", "for", "labels", "annotations"} <= set(rule), rule
        assert rule["labels"]["severity"] in {"page", "ticket"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        # Its section is checked by tests/observability/test_alert_rules.py.
        assert rule["annotations"]["runbook_url"]
    names = {rule["alert"] for rule in alerts}
    assert {
        "McpTasksDown",
        "McpTasksServerErrors",
        "McpTasksCreateLatencyBudgetBurn",
        "McpTasksNotReady",
        "McpTasksNoWorkerPolling",
        "McpTasksScheduleToStartSlow",
        "McpTasksQuotaSaturated",
        "McpTasksWorkflowTaskFailures",
        "McpTasksInputWaitTooOld",
        "McpTasksStalledTasks",
        "McpTasksWebhookDeliveriesFailing",
    } <= names
    ours = {m.describe()[0].name for m in _defined_metrics()}
    ours |= {_base(name) for name in metrics.WORKER_METRICS}  # the worker's, by the SDK meter
    dashboard = json.loads((ROOT / "deploy/grafana/mcp-tasks.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert exprs
    for expr in exprs + [rule["expr"] for rule in alerts]:
        used = [word for word in _metric_words(expr) if word.startswith("mcp_tasks_")]
        for word in used:
            assert _base(word) in ours, (word, expr)
    _check_dashboard_variables(dashboard, exprs)
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    assert "alerts.yml" in config["rule_files"][0]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name in ("prometheus", "grafana"):
        service = compose["services"][name]
        assert service["profiles"] == ["observability"]
        assert all(str(port).startswith("127.0.0.1:") for port in service["ports"])


def _check_dashboard_variables(dashboard: dict[str, Any], exprs: list[str]) -> None:
    """The datasource is a variable (no hard-coded uid); namespace, task_queue and instance
    variables filter every panel; the worker's series are ours by service_name; the SLIs
    have panels."""
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert {"datasource", "namespace", "task_queue", "instance"} <= set(variables)
    assert variables["datasource"]["type"] == "datasource"
    sources = [p["datasource"] for p in dashboard["panels"]]
    sources += [t["datasource"] for p in dashboard["panels"] for t in p["targets"]]
    sources += [v["datasource"] for v in variables.values() if "datasource" in v]
    assert all(source["uid"] == "${datasource}" for source in sources)
    for expr in exprs:
        worker = 'namespace=~"$namespace",task_queue=~"$task_queue"' in expr
        assert worker or 'instance=~"$instance"' in expr, expr
        assert not worker or 'service_name="mcp-tasks"' in expr, expr
        assert "temporal_" not in expr.replace("mcp_tasks_temporal", "") or worker, expr
    for sli in (
        "mcp_tasks_task_ends_total",
        "mcp_tasks_input_answer_wait_seconds_bucket",
        "mcp_tasks_input_waits_over_threshold",
        "mcp_tasks_stalled_tasks",
        "mcp_tasks_activity_retries_over_total",
    ):
        assert any(sli in expr for expr in exprs), sli


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


def test_the_json_format_merges_an_audit_line_and_keeps_a_traceback_on_one_line() -> None:
    formatter = JsonFormatter()
    audit = logging.LogRecord(
        "mcp_server.protocol.audit",
        logging.INFO,
        "",
        0,
        '{"event":"task.create","taskId":"t"}',
        None,
        None,
    )
    merged = json.loads(formatter.format(audit))
    assert merged["event"] == "task.create" and "message" not in merged
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        crash = logging.LogRecord("x", logging.ERROR, "", 0, "failed", None, sys.exc_info())
    line = formatter.format(crash)
    assert "\n" not in line and "RuntimeError: boom" in json.loads(line)["exception"]


def test_the_dashboard_file_is_what_render_panels_writes() -> None:
    # The panels are defined once (deploy/grafana/render_panels.py); the JSON is its output.
    path = ROOT / "deploy/grafana/render_panels.py"
    spec = importlib.util.spec_from_file_location("render_panels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["render_panels"] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        written = json.loads((ROOT / "deploy/grafana/mcp-tasks.json").read_text())
        assert written == module.dashboard()
    finally:
        del sys.modules["render_panels"]


def test_read_lines_can_be_sampled_and_nothing_else_is(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=REQUEST_LOGGER)
    sample_reads(3)
    try:
        for n in range(6):
            request_line({"method": "tasks/get", "taskId": f"t{n}", "outcome": "ok", "status": 200})
        request_line({"method": "tasks/get", "outcome": "-32602", "status": 400})
        request_line({"method": "tasks/update", "outcome": "ok", "status": 200})
    finally:
        sample_reads(1)
    logged = [r.fields for r in caplog.records if r.name == REQUEST_LOGGER]  # type: ignore[attr-defined]
    assert [(f["method"], f.get("taskId"), f["outcome"]) for f in logged] == [
        ("tasks/get", "t0", "ok"),
        ("tasks/get", "t3", "ok"),
        ("tasks/get", None, "-32602"),
        ("tasks/update", None, "ok"),
    ]
    assert [f.get("sampledOneIn") for f in logged] == [3, 3, None, None]
