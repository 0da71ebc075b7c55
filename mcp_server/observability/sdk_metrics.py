"""The Temporal SDK's runtime of the process: its core's logs forwarded to Python logging, and
its Prometheus exporter (its Runtime telemetry), one per process, on
`MCP_TASKS_METRICS_HOST:MCP_TASKS_WORKER_METRICS_PORT` when that port is set: the worker's
workflow and activity metrics, the process's Temporal client latency
(`temporal_request_latency_seconds`, the server's too when it has the port), and the worker's
own metrics recorded through the SDK's meter (metrics.WORKER_METRICS).

So that a shared Prometheus tells this deployment's series from other teams':
- every series carries `service_name` = MCP_TASKS_SDK_METRICS_SERVICE_NAME (not the SDK's
  `temporal-core-sdk`), and the worker's carry `namespace` and `task_queue`, which the alerts
  and the dashboard filter on;
- counters end in `_total` and durations are seconds with a `_seconds` suffix (Prometheus
  practice; MCP_TASKS_SDK_METRICS_TOTAL_SUFFIX and MCP_TASKS_SDK_METRICS_SECONDS turn this off
  for a Prometheus whose rules expect the SDK's defaults).

The SDK's core (Rust) writes its own log lines, ANSI-coloured text on stderr, unless told to
forward them: those are the lines of a Temporal outage (`gRPC call poll_workflow_task_queue
retried 16 times`), exactly when on-call searches the logs. Every runtime here forwards them
to the `temporalio.core` logger, so they go through the process's formatter (one JSON object
per line in the json format) at the core's WARN level and above.
"""

from __future__ import annotations

import logging
from functools import cache

from temporalio.common import MetricMeter
from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
)

from mcp_server.observability.metrics import (
    INPUT_ANSWER_BUCKETS,
    INPUT_ANSWER_SECONDS,
    TASK_END_OUTCOMES,
    TASK_ENDS,
    TASK_ENDS_HELP,
    WEBHOOK_DELIVERIES,
    WEBHOOK_DELIVERY_BUCKETS,
    WEBHOOK_DELIVERY_SECONDS,
    WEBHOOK_OUTCOMES,
)
from mcp_tasks.contracts.webhooks import DELIVER_ACTIVITY, DELIVERIES_HELP, DELIVERY_WORKFLOW
from mcp_tasks.settings import ConfigError, Settings

CORE_LOGGER = "temporalio.core"


def sdk_runtime(settings: Settings) -> Runtime:
    """The process's runtime: the core's logs forwarded, and an exporter serving the SDK's
    metrics when MCP_TASKS_WORKER_METRICS_PORT is set."""
    if settings.worker_metrics_port is None:
        return _logging_runtime()
    address = f"{settings.metrics_host}:{settings.worker_metrics_port}"
    try:
        return _runtime(
            address,
            settings.sdk_metrics_service_name,
            settings.sdk_metrics_total_suffix,
            settings.sdk_metrics_seconds,
        )
    except (RuntimeError, ValueError) as err:  # the exporter could not bind: name the setting
        raise ConfigError(
            f"MCP_TASKS_WORKER_METRICS_PORT: the Temporal SDK's metrics exporter cannot listen "
            f"on {address} ({err}); another process holds the port (a server given the same "
            "setting serves its client's metrics there): give each process on a host its own"
        ) from err


@cache  # a Runtime binds its port: one per process and address
def _runtime(bind_address: str, service_name: str, total_suffix: bool, seconds: bool) -> Runtime:
    # Our own histograms are recorded in seconds under names that say so.
    buckets = {
        WEBHOOK_DELIVERY_SECONDS: WEBHOOK_DELIVERY_BUCKETS,
        INPUT_ANSWER_SECONDS: INPUT_ANSWER_BUCKETS,
    }
    prometheus = PrometheusConfig(
        bind_address=bind_address,
        counters_total_suffix=total_suffix,
        unit_suffix=seconds,
        durations_as_seconds=seconds,
        histogram_bucket_overrides=buckets,
    )
    telemetry = TelemetryConfig(
        logging=_forwarded_logs(),
        metrics=prometheus,
        global_tags={"service_name": service_name},
        attach_service_name=False,
    )
    return Runtime(telemetry=telemetry)


@cache
def _logging_runtime() -> Runtime:
    return Runtime(telemetry=TelemetryConfig(logging=_forwarded_logs()))


def _forwarded_logs() -> LoggingConfig:
    """The SDK's default levels (core WARN, other crates ERROR), to Python logging. The
    record's time stays Python's (the core's is at most a few milliseconds older), and the
    core's target (its Rust module) is in the message, not in the logger's name, so one
    logger name finds them all."""
    forwarding = LogForwardingConfig(
        logger=logging.getLogger(CORE_LOGGER),
        append_target_to_name=False,
        prepend_target_on_message=True,
        overwrite_log_record_time=False,
    )
    return LoggingConfig(filter=LoggingConfig.default.filter, forwarding=forwarding)


def export_worker_zeros(
    meter: MetricMeter, namespace: str, task_queue: str, tools: list[tuple[str, str]]
) -> None:
    """The worker's labelled counters at zero for their known label values, so a rate reads 0
    from the worker's start rather than "no data" until the first event. Each zero carries
    exactly the labels the SDK's meter adds to the real series (`workflow_type` in a
    workflow, `activity_type` in an activity): a zero under other labels is another series,
    and `rate()` never sees the first increment of the real one. `tools`: (tool, its
    workflow type)."""
    where = {"namespace": namespace, "task_queue": task_queue}
    ends = meter.create_counter(TASK_ENDS, TASK_ENDS_HELP)
    for tool, workflow_type in tools:
        for outcome in TASK_END_OUTCOMES:
            ends.add(0, {**where, "workflow_type": workflow_type, "tool": tool, "outcome": outcome})
    deliveries = meter.create_counter(WEBHOOK_DELIVERIES, DELIVERIES_HELP)
    for outcome in WEBHOOK_OUTCOMES:
        # gave_up is counted by the delivery workflow, the others by its activity
        where_counted = (
            {"workflow_type": DELIVERY_WORKFLOW}
            if outcome == "gave_up"
            else {"activity_type": DELIVER_ACTIVITY}
        )
        deliveries.add(0, {**where, **where_counted, "outcome": outcome})
