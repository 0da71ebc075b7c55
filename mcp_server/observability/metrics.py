"""Every Prometheus metric of the MCP server, defined here and nowhere else.

Rules:
- Labels have bounded values only: a method of the dispatch table (else `other`), an outcome
  (`ok`, a JSON-RPC code, or `http_<status>` for a refusal before JSON-RPC), an operation, a
  tool name of the registry, a task status, a refusal reason, a Temporal operation and status
  code. Never a taskId, a principal, a session, an argument or an answer
  (tests/observability/test_observability.py scrapes and checks).
- Nothing here calls Temporal on the request path: a request only bumps counters and observes
  one histogram. Open tasks and input waits are gauges refreshed in the background
  (visibility.py), at most every `metrics_refresh_s`.
- The worker's metrics are the Temporal SDK's own (its runtime's Prometheus exporter), on the
  worker's port: workflow task failures, activity failures, poll results, schedule-to-start
  latency; and the webhook deliveries the worker records through the SDK's meter
  (`WORKER_METRICS`). See docs/operations/observability.md.
- No "no data" where a zero is meant: labelled counters are exported at zero for their known
  label values from the start (`export_zeros`); a background gauge is exported only once it has
  a value (`LateGauge`), never as a 0 on the first scrape after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import (
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mcp_server.protocol.dispatch import TABLE_2025
from mcp_server.tasks import followed, temporal_errors
from mcp_tasks.contracts.webhooks import (
    DELIVERIES_METRIC,
    DELIVERY_SECONDS_BUCKETS,
    DELIVERY_SECONDS_METRIC,
    SUSPENDED_METRIC,
)
from mcp_tasks.settings import ConfigError

# No `_created` series: half the text of every scrape, and unused here.
disable_created_metrics()  # type: ignore[no-untyped-call]


KNOWN_METHODS = frozenset(TABLE_2025)
OPERATIONS = ("create", "get", "update", "cancel", "listen", "other")
# The Temporal calls of the server (temporal_errors.py), and the gRPC codes of an outage, whose
# error counters exist at zero from the start.
TEMPORAL_OPERATIONS = (
    "start_workflow",
    "describe_workflow",
    "signal_workflow",
    "cancel_workflow",
    "count_workflows",
    "query_workflow",
    "start_workflow_update",
)
OUTAGE_CODES = ("UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED")


class LateGauge(Collector):
    """A gauge without labels that is exported only once it has been set: a background value
    (the workers polling, the last refresh) is absent until first measured, never a 0 that
    reads as "no worker" or "refreshed in 1970"."""

    def __init__(self, name: str, documentation: str) -> None:
        self._name, self._documentation = name, documentation
        self._value: float | None = None
        REGISTRY.register(self)

    def set(self, value: float) -> None:
        self._value = value

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily(self._name, self._documentation)]

    def collect(self) -> Iterator[Metric]:
        if self._value is not None:
            yield GaugeMetricFamily(self._name, self._documentation, value=self._value)


REQUESTS = Counter(
    "mcp_tasks_requests",
    "MCP HTTP requests by JSON-RPC method and outcome (ok, a JSON-RPC error code, http_NNN)",
    ["method", "outcome"],
)
REQUEST_LATENCY = Histogram(
    "mcp_tasks_request_duration_seconds",
    "Time from the request to the first byte of its answer, by operation (create: a tools/call "
    "that created a task; listen: until the stream opened)",
    ["operation"],
    buckets=temporal_errors.LATENCY_BUCKETS,
)
REFUSALS = Counter(
    "mcp_tasks_refusals",
    "Requests refused by a limit or a gate: quota, rate_limit, unauthenticated, forbidden, "
    "body_too_large",
    ["reason"],
)
# Defined by the task layer, which counts them (tasks/temporal_errors.py, with
# TEMPORAL_REQUEST_LATENCY below); listed here with the server's other metrics.
TEMPORAL_RPC_ERRORS = temporal_errors.TEMPORAL_RPC_ERRORS
OPEN_TASKS = Gauge(
    "mcp_tasks_open_tasks",
    "Running tasks by tool and status (working, input_required), from Temporal's visibility "
    "store (search attributes McpTool, McpStatus), refreshed in the background",
    ["tool", "status"],
)
INPUT_WAIT_OLDEST = Gauge(
    "mcp_tasks_input_wait_oldest_seconds",
    "Age of the oldest input_required wait, by tool (0 when none waits)",
    ["tool"],
)
INPUT_WAITS_OVER_THRESHOLD = Gauge(
    "mcp_tasks_input_waits_over_threshold",
    "Running input_required waits older than MCP_TASKS_INPUT_WAIT_THRESHOLD_S, by tool",
    ["tool"],
)
STALLED_TASKS = Gauge(
    "mcp_tasks_stalled_tasks",
    "Running working tasks whose state has not changed for MCP_TASKS_STALLED_AFTER_S, by tool",
    ["tool"],
)
WORKERS_POLLING = LateGauge(
    "mcp_tasks_workers_polling",
    "Workers whose poller was seen on the task queue within MCP_TASKS_READY_POLLER_MAX_AGE_S, "
    "refreshed in the background (absent until first counted)",
)
VISIBILITY_REFRESHES = Counter(
    "mcp_tasks_visibility_refreshes",
    "Background refreshes of the open-task gauges, by outcome (ok, error)",
    ["outcome"],
)
VISIBILITY_REFRESHED_AT = LateGauge(
    "mcp_tasks_visibility_refreshed_timestamp_seconds",
    "When the open-task gauges were last refreshed successfully (Unix time; absent until then)",
)
READY = LateGauge(
    "mcp_tasks_ready",
    "1 when this replica's last readiness check (the background refresh's, or a /readyz "
    "probe's) found it able to serve, 0 when not (absent until first checked)",
)
DEPLOYMENT = Gauge(
    "mcp_tasks_deployment_info",
    "Always 1: the Temporal namespace and task queue this server serves, for the alerts to "
    "pick this deployment's temporal_* series out of a shared Prometheus, and the team's "
    "Temporal Web UI (MCP_TASKS_TEMPORAL_UI_URL, empty when unset) for their links",
    ["namespace", "task_queue", "temporal_ui_url"],
)
TEMPORAL_REQUEST_LATENCY = temporal_errors.TEMPORAL_REQUEST_LATENCY
# Defined by the task layer, which counts them (tasks/followed.py): task reads by source; the
# share of `temporal` is the Temporal reads per tasks/get.
TASK_READS = followed.TASK_READS

# The worker's own metrics: webhook delivery attempts (activities/delivery.py), recorded through
# the Temporal SDK's meter and so served with the SDK's metrics on the worker's port
# (MCP_TASKS_WORKER_METRICS_PORT), not by this registry. Outcome: delivered, failed (retried),
# rejected (a 4xx, not retried), gone (a 410: stopped), suspended (the endpoint is suspended after
# sustained failure; retried later), gave_up (a day of retries went by; the delivery workflow).
WEBHOOK_DELIVERIES = DELIVERIES_METRIC
WEBHOOK_DELIVERY_SECONDS = DELIVERY_SECONDS_METRIC
WEBHOOK_ENDPOINT_SUSPENDED = SUSPENDED_METRIC
WEBHOOK_DELIVERY_BUCKETS = DELIVERY_SECONDS_BUCKETS
WEBHOOK_OUTCOMES = ("delivered", "failed", "rejected", "gone", "suspended", "gave_up")
# How task workflows end, by tool, counted once by the worker that ran the end
# (task_outcomes.py): completed, error_result (completed with isError), failed, cancelled.
TASK_ENDS = "mcp_tasks_task_ends"
# One help text wherever it is counted (the SDK's exporter keeps a series per description).
TASK_ENDS_HELP = "How task workflows ended, by tool and outcome"
TASK_END_OUTCOMES = ("completed", "error_result", "failed", "cancelled")
# The time from input_required to the answer that ended the wait, by tool (seconds).
INPUT_ANSWER_SECONDS = "mcp_tasks_input_answer_wait_seconds"
INPUT_ANSWER_BUCKETS = (
    10.0,
    60.0,
    300.0,
    900.0,
    3600.0,
    4 * 3600.0,
    8 * 3600.0,
    86400.0,
    3 * 86400.0,
    7 * 86400.0,
)
# Activity attempts beyond MCP_TASKS_ACTIVITY_ATTEMPTS_THRESHOLD, by activity type.
ACTIVITY_RETRIES_OVER = "mcp_tasks_activity_retries_over"
WORKER_METRICS = (
    WEBHOOK_DELIVERIES,
    WEBHOOK_DELIVERY_SECONDS,
    WEBHOOK_ENDPOINT_SUSPENDED,
    TASK_ENDS,
    INPUT_ANSWER_SECONDS,
    ACTIVITY_RETRIES_OVER,
)

_REFUSAL_BY_OUTCOME = {
    "-31001": "quota",
    "-31000": "rate_limit",
    "http_401": "unauthenticated",
    "http_403": "forbidden",
    "http_413": "body_too_large",
}
_OPERATION = {
    "tasks/get": "get",
    "tasks/update": "update",
    "tasks/cancel": "cancel",
    "subscriptions/listen": "listen",
}


def method_label(method: str | None) -> str:
    """A method name fit for a label: one of the table, else `other` (never the client's
    string: an unknown method could be anything, and each would be a new time series)."""
    if method is None:
        return "-"
    return method if method in KNOWN_METHODS else "other"


def operation_of(method: str | None, created_task: bool) -> str:
    if method == "tools/call":
        return "create" if created_task else "other"
    return _OPERATION.get(method or "", "other")


_request_counters: dict[tuple[str, str], Any] = {}
_latencies = {operation: REQUEST_LATENCY.labels(operation) for operation in OPERATIONS}


def export_zeros() -> None:
    """The labelled counters of the server at zero for their known label values, so a rate is
    0 rather than "no data" before the first event."""
    for reason in _REFUSAL_BY_OUTCOME.values():
        REFUSALS.labels(reason)
    for operation in TEMPORAL_OPERATIONS:
        TEMPORAL_REQUEST_LATENCY.labels(operation)
        for code in OUTAGE_CODES:
            TEMPORAL_RPC_ERRORS.labels(operation, code)
    for outcome in ("ok", "error"):
        VISIBILITY_REFRESHES.labels(outcome)
    for method in KNOWN_METHODS:
        for outcome in ("ok", "-32603"):
            _request_counters[(method, outcome)] = REQUESTS.labels(method, outcome)


def record_request(
    method: str | None, outcome: str, created_task: bool, latency_s: float | None
) -> None:
    """One finished request: its count, its refusal reason if any, its latency. The labelled
    children are kept (both label sets are bounded), so a request costs two dict lookups."""
    key = (method_label(method), outcome)
    counter = _request_counters.get(key)
    if counter is None:
        counter = _request_counters[key] = REQUESTS.labels(*key)
    counter.inc()
    reason = _REFUSAL_BY_OUTCOME.get(outcome)
    if reason is not None:
        REFUSALS.labels(reason).inc()
    if latency_s is not None and method is not None:
        _latencies[operation_of(method, created_task)].observe(latency_s)


export_zeros()


def serve_metrics(host: str, port: int) -> Callable[[], None]:
    """/metrics on a listener of its own (a daemon thread), without authentication: bind it
    where only the scraper reaches (the default host is 127.0.0.1). Returns how to stop it. A
    port in use is a ConfigError naming the setting: one env file shared by two processes on
    one host is the usual cause."""
    try:
        server, thread = start_http_server(port, addr=host)
    except OSError as err:
        raise ConfigError(
            f"MCP_TASKS_METRICS_PORT: cannot listen on {host}:{port} ({err.strerror or err}); "
            "another process (a second server with the same settings?) holds the port: give "
            "each process its own"
        ) from err

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return stop


class ScrapeHook(Collector):
    """Calls `started()` on `loop` when the registry is first collected, by whichever
    listener serves it (the main port's /metrics or MCP_TASKS_METRICS_PORT's, a thread of its
    own): the background refresh must not depend on which port Prometheus scrapes. It exports
    nothing."""

    def __init__(self, loop: asyncio.AbstractEventLoop, started: Callable[[], None]) -> None:
        self._loop, self._started = loop, started
        self._fired = False

    def describe(self) -> list[Metric]:
        return []  # so that registering it does not collect it (and fire)

    def collect(self) -> Iterator[Metric]:
        if not self._fired:
            self._fired = True
            with contextlib.suppress(RuntimeError):  # the loop is closed: the server has stopped
                self._loop.call_soon_threadsafe(self._started)
        return iter(())
