"""The Temporal SDK's Prometheus exporter (its Runtime telemetry), one per process, on
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
"""

from __future__ import annotations

from functools import cache

from temporalio.common import MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from mcp_server.observability.metrics import (
    INPUT_ANSWER_BUCKETS,
    INPUT_ANSWER_SECONDS,
    TASK_END_OUTCOMES,
    TASK_ENDS,
    WEBHOOK_DELIVERIES,
    WEBHOOK_DELIVERY_BUCKETS,
    WEBHOOK_DELIVERY_SECONDS,
    WEBHOOK_OUTCOMES,
)
from mcp_tasks.settings import Settings


def sdk_metrics_runtime(settings: Settings) -> Runtime | None:
    """The process's runtime whose exporter serves the SDK's metrics; None when no port is
    set (the SDK's default runtime, no exporter)."""
    if settings.worker_metrics_port is None:
        return None
    return _runtime(
        f"{settings.metrics_host}:{settings.worker_metrics_port}",
        settings.sdk_metrics_service_name,
        settings.sdk_metrics_total_suffix,
        settings.sdk_metrics_seconds,
    )


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
        metrics=prometheus, global_tags={"service_name": service_name}, attach_service_name=False
    )
    return Runtime(telemetry=telemetry)


def export_worker_zeros(
    meter: MetricMeter, namespace: str, task_queue: str, tools: list[str]
) -> None:
    """The worker's labelled counters at zero for their known label values, so a rate reads 0
    from the worker's start rather than "no data" until the first event."""
    where = {"namespace": namespace, "task_queue": task_queue}
    ends = meter.create_counter(TASK_ENDS, "How task workflows ended, by tool and outcome")
    for tool in tools:
        for outcome in TASK_END_OUTCOMES:
            ends.add(0, {**where, "tool": tool, "outcome": outcome})
    deliveries = meter.create_counter(WEBHOOK_DELIVERIES, "Webhook delivery attempts by outcome")
    for outcome in WEBHOOK_OUTCOMES:
        deliveries.add(0, {**where, "outcome": outcome})
