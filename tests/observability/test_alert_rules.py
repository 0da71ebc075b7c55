"""The alert rules (deploy/prometheus/alerts.yml): valid for Prometheus (`promtool check
rules`), the important alerts fire when they should and only then, on our series and not on
another team's in a shared Prometheus (`promtool test rules`, deploy/prometheus/alerts_test.yml),
and every alert's `runbook_url` points to a section of docs/operations/runbooks.md that exists,
which the on-call page lists.

promtool is Debian's `prometheus` package (`apt-get install -y prometheus`), which .ci/run
installs: in CI (`CI` set) its absence is a failure; on a machine without it the promtool tests
skip and say so."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy/prometheus"
RUNBOOKS = ROOT / "docs/operations/runbooks.md"
RUNBOOK_PATH = "operations/runbooks/#"


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing in CI: .ci/run installs Debian's prometheus")
        pytest.skip("promtool is not installed here (apt-get install -y prometheus)")
    return found


def alerts() -> list[dict[str, object]]:
    rules = yaml.safe_load((RULES / "alerts.yml").read_text())
    return [rule for group in rules["groups"] for rule in group["rules"]]


def test_promtool_accepts_the_alert_rules() -> None:
    checked = subprocess.run(
        [promtool(), "check", "rules", str(RULES / "alerts.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_important_alerts_fire_when_they_should_and_only_then() -> None:
    tested = subprocess.run(
        [promtool(), "test", "rules", "alerts_test.yml"],
        cwd=RULES,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def runbook_anchors() -> set[str]:
    """The ids of the page's headings as mkdocs makes them (python-markdown's toc slugify:
    lower case, word characters and hyphens kept, spaces to hyphens). `make docs` (strict)
    checks the on-call page's links to them against the built site."""
    return {
        re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", line.lstrip("#")).strip().lower())
        for line in RUNBOOKS.read_text().splitlines()
        if line.startswith("#")
    }


def test_every_alert_links_a_runbook_section_that_exists_and_the_on_call_page_lists_it() -> None:
    anchors = runbook_anchors()
    on_call = (ROOT / "docs/operations/on-call.md").read_text()
    for rule in alerts():
        annotations = rule["annotations"]
        assert isinstance(annotations, dict)
        url = str(annotations["runbook_url"])
        assert url.startswith(RUNBOOK_PATH), (rule["alert"], url)
        assert url.removeprefix(RUNBOOK_PATH) in anchors, (rule["alert"], url)
        assert f"`{rule['alert']}`" in on_call
        assert f"runbooks.md#{url.removeprefix(RUNBOOK_PATH)}" in on_call
    nav = (ROOT / "mkdocs.yml").read_text()
    assert "operations/runbooks.md" in nav and "operations/on-call.md" in nav


def test_the_temporal_sdk_series_are_ours_by_the_deployment_info_not_hard_coded_names() -> None:
    # In a shared Prometheus, an unfiltered temporal_* alert fires on other teams' workers; a
    # hard-coded namespace or queue is dead on any other deployment (alerts_test.yml runs
    # the rules on `mcp-prod`).
    for rule in alerts():
        expr = str(rule["expr"])
        if "temporal_" in expr.replace("mcp_tasks_temporal", ""):
            assert "on (namespace, task_queue) group_left" in expr, rule["alert"]
            assert "mcp_tasks_deployment_info" in expr, rule["alert"]
            for label in ("service_name=", "namespace=", "task_queue="):
                assert label not in expr, (rule["alert"], label)


def test_every_series_an_alert_reads_has_an_absence_rule() -> None:
    # An alert on a series that is never exported can never fire: McpTasksMetricsMissing
    # names each per target, and the promtool cases fire it.
    rules = {str(rule["alert"]): str(rule["expr"]) for rule in alerts()}
    missing = rules["McpTasksMetricsMissing"]
    gauges = {
        "mcp_tasks_workers_polling",
        "mcp_tasks_visibility_refreshed_timestamp_seconds",
        "mcp_tasks_ready",
        "mcp_tasks_input_waits_over_threshold",
        "mcp_tasks_stalled_tasks",
        "mcp_tasks_deployment_info",
    }
    for name, expr in rules.items():
        for gauge in gauges:
            if re.search(rf"\b{gauge}\b", expr) and name != "McpTasksMetricsMissing":
                assert f'"metric", "{gauge}"' in missing, (name, gauge)
    assert '"metric", "mcp_tasks_task_ends_total"' in missing  # the worker's exporter
    assert 'absent(up{job="mcp-worker"})' in rules["McpTasksNotScraped"]
