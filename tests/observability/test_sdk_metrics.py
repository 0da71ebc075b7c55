"""The worker's metrics on the Temporal SDK's exporter (observability/sdk_metrics.py,
task_outcomes.py): our own `service_name`, `namespace` and `task_queue` on every series,
counters with `_total`, durations in seconds, the task SLIs counted by the worker, and its
counters at zero from the start. A real dev server and a real worker: the exporter is the
SDK's Rust core, which only a real runtime runs."""

from __future__ import annotations

import socket
import urllib.request
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families
from temporalio.client import Client

from mcp_server.observability.metrics import serve_metrics
from mcp_server.observability.sdk_metrics import sdk_runtime
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.temporal.connection import observed_connection
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import ConfigError, Settings
from tests.conftest import running_stack

Sample = tuple[str, dict[str, str], float]


def scrape(port: int) -> list[Sample]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return [
        (sample.name, sample.labels, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def total(samples: list[Sample], name: str, **labels: str) -> float | None:
    """The sum of `name` over the series holding `labels`; None when there is none."""
    found = [v for n, have, v in samples if n == name and labels.items() <= have.items()]
    return sum(found) if found else None


async def test_the_worker_exports_task_ends_and_answer_waits_under_our_own_names_and_labels(
    temporal: TemporalDevServer, registry: ToolRegistry
) -> None:
    port, queue = free_port(), f"tests-{uuid.uuid4()}"
    settings = Settings(worker_metrics_port=port, task_queue=queue, activity_attempts_threshold=1)
    client = await Client.connect(temporal.address, **observed_connection(settings))
    async with running_stack(
        client, registry, task_queue=queue, activity_attempts_threshold=1
    ) as stack:
        at_start = scrape(port)
        mcp = stack.mcp
        approved = await mcp.create_task("request_approval", {"message": "Ship it?"})
        declined = await mcp.create_task("multi_step_job", {"require_approval": True})
        cancelled = await mcp.create_task("multi_step_job", {"require_approval": True})
        failing = await mcp.create_task(
            "tests_secret_work", {"api_key": "k-1", "mode": "activity_fails"}
        )
        for task_id in (approved, declined, cancelled):
            await mcp.wait_status(task_id, "input_required", within=15)
        accept = {"action": "accept", "content": {"decision": "approve"}}
        assert "error" not in (await mcp.update_task(approved, {"decision": accept})).body
        assert (
            "error"
            not in (await mcp.update_task(declined, {"approve": {"action": "decline"}})).body
        )
        assert "error" not in (await mcp.cancel_task(cancelled)).body
        await mcp.wait_status(approved, "completed", within=15)
        await mcp.wait_status(declined, "completed", within=15)
        await mcp.wait_status(cancelled, "cancelled", within=15)
        await mcp.wait_status(failing, "failed", within=30)
        after = scrape(port)

    ours = {"service_name": "mcp-tasks", "namespace": "default", "task_queue": queue}
    ends = "mcp_tasks_task_ends_total"
    # At zero from the start for every task tool and outcome (not "no data").
    assert total(at_start, ends, **ours, tool="request_approval", outcome="failed") == 0
    assert total(at_start, "mcp_tasks_webhook_deliveries_total", **ours, outcome="gave_up") == 0
    assert total(after, ends, **ours, tool="request_approval", outcome="completed") == 1
    # The zeros are the very series the real ends increment (the labels the SDK's meter adds
    # included): a zero under other labels is another series, whose first increment rate()
    # cannot see.
    workflow_type = {t.name: t.workflow for t in registry.tools()}["request_approval"]
    for samples, expected in ((at_start, 0), (after, 1)):
        series = [
            (labels, v)
            for n, labels, v in samples
            if n == ends
            and labels.get("tool") == "request_approval"
            and labels.get("outcome") == "completed"
        ]
        assert len(series) == 1
        assert series[0][0].get("workflow_type") == workflow_type and series[0][1] == expected
    zero_deliveries = [
        labels for n, labels, _ in at_start if n == "mcp_tasks_webhook_deliveries_total"
    ]
    assert zero_deliveries and all(
        labels.get("activity_type" if labels["outcome"] != "gave_up" else "workflow_type")
        for labels in zero_deliveries
    )
    assert total(after, ends, **ours, tool="multi_step_job", outcome="error_result") == 1
    assert total(after, ends, **ours, tool="multi_step_job", outcome="cancelled") == 1
    assert total(after, ends, **ours, tool="tests_secret_work", outcome="failed") == 1
    answered = "mcp_tasks_input_answer_wait_seconds_count"
    assert total(after, answered, **ours, tool="request_approval") == 1
    assert total(after, answered, **ours, tool="multi_step_job") == 1  # the declined one
    retried = "mcp_tasks_activity_retries_over_total"
    assert total(after, retried, **ours, activity_type="tests_use_key") == 1  # attempt 2 of 2
    # The SDK's own metrics: counters with _total, latencies in seconds, our labels.
    polled = total(after, "temporal_workflow_task_queue_poll_succeed_total", **ours)
    assert polled is not None and polled > 0
    assert total(after, "temporal_workflow_task_schedule_to_start_latency_seconds_count", **ours)
    assert total(after, "temporal_request_latency_seconds_count", service_name="mcp-tasks")
    assert not [s for s in after if s[0].startswith("temporal_") and s[0].endswith("_ms")]
    assert all(labels.get("service_name") == "mcp-tasks" for _, labels, _ in after)


def test_a_metrics_port_in_use_is_refused_naming_its_setting() -> None:
    # One env file for a server and a worker on one host: the second process to bind the port
    # must say which setting collides, not only "Address already in use".
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=r"MCP_TASKS_WORKER_METRICS_PORT: .*127\.0\.0\.1:"):
            sdk_runtime(Settings(worker_metrics_port=port))
        with pytest.raises(ConfigError, match=r"MCP_TASKS_METRICS_PORT: cannot listen on"):
            serve_metrics("127.0.0.1", port)
