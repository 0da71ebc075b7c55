"""The MCP tasks dashboard: written as Grafana JSON, and drawn from scraped metrics as a PNG.

One list of panels (PANELS) is the source of both, so they show the same thing:

    python deploy/grafana/render_panels.py --dashboard deploy/grafana/mcp-tasks.json
    python -m bench.run --tasks 1000 --reads 2000 --metrics bench-results/metrics
    python deploy/grafana/render_panels.py --samples bench-results/metrics/samples.jsonl \
        --png docs/dashboard.png

Drawing needs matplotlib (`pip install -e '.[dashboards]'`). The PNG evaluates each panel's
query over the scrapes bench/run.py left behind (samples.jsonl: one JSON line per scrape with
the elapsed seconds, the source and the Prometheus text), with rates over `--window` seconds
where Grafana uses `$__rate_interval`.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Labels = tuple[tuple[str, str], ...]
# The worker's series (the Temporal SDK's exporter) are ours by this label
# (MCP_TASKS_SDK_METRICS_SERVICE_NAME), whatever the namespace and task_queue variables hold.
SERVICE = 'service_name="mcp-tasks"'
Scrape = dict[tuple[str, Labels], float]


@dataclass(frozen=True)
class Target:
    kind: str  # rate, quantile, sum, max
    metric: str
    by: tuple[str, ...] = ()
    equal: dict[str, str] = field(default_factory=dict)
    not_equal: dict[str, str] = field(default_factory=dict)
    q: float = 0.99
    legend: str = ""
    # Gauges every replica reports alike (counted in Temporal): max across replicas first. The
    # scrapes drawn here come from one server, where that max changes nothing.
    replicas_max_by: tuple[str, ...] = ()

    def selector(self) -> str:
        parts = [f'{k}="{v}"' for k, v in self.equal.items()]
        parts += [f'{k}!="{v}"' for k, v in self.not_equal.items()]
        return "{" + ",".join(parts) + "}" if parts else ""

    def scoped(self, scope: tuple[str, ...]) -> str:
        """The selector with the dashboard's variables (`scope`): Grafana only."""
        parts = [f'{k}="{v}"' for k, v in self.equal.items()]
        parts += [f'{k}!="{v}"' for k, v in self.not_equal.items()]
        parts += [SERVICE] if "task_queue" in scope else []
        parts += [f'{k}=~"${k}"' for k in scope]
        return "{" + ",".join(parts) + "}" if parts else ""

    def promql(self, scope: tuple[str, ...] = ()) -> str:
        by = ", ".join(self.by)
        selector = self.scoped(scope)
        if self.kind == "rate":
            inner = f"rate({self.metric}{selector}[$__rate_interval])"
            return f"sum by ({by}) ({inner})" if by else f"sum({inner})"
        if self.kind == "quantile":
            buckets = f"rate({self.metric}_bucket{selector}[$__rate_interval])"
            group = ", ".join(("le", *self.by))
            return f"histogram_quantile({self.q}, sum by ({group}) ({buckets}))"
        inner = f"{self.metric}{selector}"
        if self.replicas_max_by:
            inner = f"max by ({', '.join(self.replicas_max_by)}) ({inner})"
        return f"{self.kind} by ({by}) ({inner})" if by else f"{self.kind}({inner})"

    def matches(self, labels: Labels) -> bool:
        found = dict(labels)
        return all(found.get(k) == v for k, v in self.equal.items()) and all(
            found.get(k) != v for k, v in self.not_equal.items()
        )


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    targets: tuple[Target, ...]
    source: str = "server"

    def scope(self) -> tuple[str, ...]:
        """The variables that filter its series: the server's replicas by `instance`; the
        worker's (the Temporal SDK's exporter) by `namespace` and `task_queue`, so a shared
        Prometheus shows this deployment's workers, not another team's."""
        return ("namespace", "task_queue") if self.source == "worker" else ("instance",)


PANELS = (
    Panel(
        "Requests/s by method",
        "reqps",
        (Target("rate", "mcp_tasks_requests_total", ("method",), legend="{{method}}"),),
    ),
    Panel(
        "Errors/s by outcome (JSON-RPC code)",
        "reqps",
        (
            Target(
                "rate",
                "mcp_tasks_requests_total",
                ("outcome",),
                not_equal={"outcome": "ok"},
                legend="{{outcome}}",
            ),
        ),
    ),
    Panel(
        "Latency p99 by operation",
        "s",
        (
            Target(
                "quantile",
                "mcp_tasks_request_duration_seconds",
                ("operation",),
                legend="p99 {{operation}}",
            ),
        ),
    ),
    Panel(
        "Latency p50 by operation",
        "s",
        (
            Target(
                "quantile",
                "mcp_tasks_request_duration_seconds",
                ("operation",),
                q=0.5,
                legend="p50 {{operation}}",
            ),
        ),
    ),
    Panel(
        "Task ends/s by tool and outcome (worker)",
        "ops",
        (
            Target(
                "rate",
                "mcp_tasks_task_ends_total",
                ("tool", "outcome"),
                legend="{{tool}} {{outcome}}",
            ),
        ),
        source="worker",
    ),
    Panel(
        "Time from input_required to its answer, p50 and p90 by tool (worker)",
        "s",
        (
            Target(
                "quantile",
                "mcp_tasks_input_answer_wait_seconds",
                ("tool",),
                q=0.5,
                legend="p50 {{tool}}",
            ),
            Target(
                "quantile",
                "mcp_tasks_input_answer_wait_seconds",
                ("tool",),
                q=0.9,
                legend="p90 {{tool}}",
            ),
        ),
        source="worker",
    ),
    Panel(
        "Waits over the threshold and stalled tasks by tool",
        "short",
        (
            Target(
                "max",
                "mcp_tasks_input_waits_over_threshold",
                ("tool",),
                legend="late waits {{tool}}",
            ),
            Target("max", "mcp_tasks_stalled_tasks", ("tool",), legend="stalled {{tool}}"),
        ),
    ),
    Panel(
        "Activity attempts over the threshold/s (worker)",
        "ops",
        (
            Target(
                "rate",
                "mcp_tasks_activity_retries_over_total",
                ("activity_type",),
                legend="{{activity_type}}",
            ),
        ),
        source="worker",
    ),
    Panel(
        "Open tasks by status",
        "short",
        (
            Target(
                "sum",
                "mcp_tasks_open_tasks",
                ("status",),
                legend="{{status}}",
                replicas_max_by=("tool", "status"),
            ),
        ),
    ),
    Panel(
        "Oldest input wait by tool",
        "s",
        (Target("max", "mcp_tasks_input_wait_oldest_seconds", ("tool",), legend="{{tool}}"),),
    ),
    Panel(
        "Quota and rate-limit refusals/s",
        "reqps",
        (Target("rate", "mcp_tasks_refusals_total", ("reason",), legend="{{reason}}"),),
    ),
    Panel(
        "Workers polling (recent pollers) and replicas ready",
        "short",
        (
            Target("max", "mcp_tasks_workers_polling", legend="workers"),
            Target("sum", "mcp_tasks_ready", legend="replicas ready"),
        ),
    ),
    Panel(
        "Worker: workflow tasks polled and failed/s",
        "ops",
        (
            Target("rate", "temporal_workflow_task_queue_poll_succeed_total", legend="polled"),
            Target("rate", "temporal_workflow_task_execution_failed_total", legend="failed"),
        ),
        source="worker",
    ),
    Panel(
        "Worker: workflow task schedule-to-start p99",
        "s",
        (
            Target(
                "quantile", "temporal_workflow_task_schedule_to_start_latency_seconds", legend="p99"
            ),
        ),
        source="worker",
    ),
    Panel(
        "Temporal client latency p99 by operation (server)",
        "s",
        (
            Target(
                "quantile",
                "mcp_tasks_temporal_request_duration_seconds",
                ("operation",),
                legend="p99 {{operation}}",
            ),
        ),
    ),
    Panel(
        "Temporal RPC errors/s (server)",
        "ops",
        (
            Target(
                "rate",
                "mcp_tasks_temporal_rpc_errors_total",
                ("operation", "code"),
                legend="{{operation}} {{code}}",
            ),
        ),
    ),
    Panel(
        "Webhook delivery attempts/s (worker)",
        "ops",
        (Target("rate", "mcp_tasks_webhook_deliveries_total", ("outcome",), legend="{{outcome}}"),),
        source="worker",
    ),
)


# The datasource is a variable (no uid of one Grafana's); the series are filtered by the
# variables below, each listing what the metrics hold (the worker's by our service_name).
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def _variable(name: str, query: str) -> dict[str, Any]:
    return {
        "name": name,
        "label": name,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": query, "refId": name},
        "definition": query,
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
    }


def templating() -> dict[str, Any]:
    polled = "temporal_workflow_task_queue_poll_succeed_total"
    return {
        "list": [
            {
                "name": "datasource",
                "label": "datasource",
                "type": "datasource",
                "query": "prometheus",
                "current": {},
            },
            _variable("namespace", f"label_values({polled}{{{SERVICE}}}, namespace)"),
            _variable(
                "task_queue",
                f'label_values({polled}{{{SERVICE},namespace=~"$namespace"}}, task_queue)',
            ),
            _variable("instance", "label_values(mcp_tasks_requests_total, instance)"),
        ]
    }


def dashboard() -> dict[str, Any]:
    panels = []
    for index, panel in enumerate(PANELS):
        targets = [
            {
                "refId": chr(ord("A") + i),
                "expr": t.promql(panel.scope()),
                "legendFormat": t.legend,
                "datasource": DATASOURCE,
            }
            for i, t in enumerate(panel.targets)
        ]
        panels.append(
            {
                "id": index + 1,
                "type": "timeseries",
                "title": panel.title,
                "datasource": DATASOURCE,
                "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
                "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
                "targets": targets,
            }
        )
    return {
        "uid": "mcp-tasks",
        "title": "MCP tasks on Temporal",
        "tags": ["mcp", "temporal"],
        "timezone": "utc",
        "schemaVersion": 39,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": templating(),
        "panels": panels,
    }


# ----- drawing from scrapes -------------------------------------------------------------


def load(path: Path) -> dict[str, list[tuple[float, Scrape]]]:
    series: dict[str, list[tuple[float, Scrape]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        scrape: Scrape = {}
        for family in text_string_to_metric_families(entry["text"]):
            for sample in family.samples:
                labels = tuple(sorted(sample.labels.items()))
                scrape[(sample.name, labels)] = sample.value
                if family.type == "counter":
                    # The parser adds `_total`; Prometheus keeps the SDK's bare counter names.
                    scrape[(family.name, labels)] = sample.value
        series[entry["source"]].append((float(entry["t"]), scrape))
    return series


def _grouped(target: Target, scrape: Scrape, name: str, extra: tuple[str, ...] = ()) -> Scrape:
    out: Scrape = defaultdict(float)
    for (metric, labels), value in scrape.items():
        if metric == name and target.matches(labels):
            found = dict(labels)
            out[(name, tuple((k, found.get(k, "")) for k in (*target.by, *extra)))] += value
    return out


def _quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    buckets.sort()
    total = buckets[-1][1] if buckets else 0.0
    if total <= 0:
        return math.nan
    rank, previous_bound, previous_count = q * total, 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return previous_bound
            share = (rank - previous_count) / (count - previous_count or 1)
            return previous_bound + (bound - previous_bound) * share
        previous_bound, previous_count = bound, count
    return previous_bound


def evaluate(
    target: Target, scrapes: list[tuple[float, Scrape]], window: float
) -> dict[str, list[tuple[float, float]]]:
    """Each legend's (time, value) points of one target over the scrapes."""
    lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for index, (t, scrape) in enumerate(scrapes):
        if target.kind in ("sum", "max"):
            values: dict[Labels, list[float]] = defaultdict(list)
            for (metric, labels), value in scrape.items():
                if metric == target.metric and target.matches(labels):
                    found = dict(labels)
                    values[tuple((k, found.get(k, "")) for k in target.by)].append(value)
            for key, found_values in values.items():
                pick = sum(found_values) if target.kind == "sum" else max(found_values)
                lines[_legend(target, key)].append((t, pick))
            continue
        start = next((j for j in range(index) if t - scrapes[j][0] <= window), index)
        if start == index:
            continue
        t0, first = scrapes[start]
        if target.kind == "rate":
            now, then = (
                _grouped(target, scrape, target.metric),
                _grouped(target, first, target.metric),
            )
            for key, value in now.items():
                lines[_legend(target, key[1])].append((t, (value - then.get(key, 0.0)) / (t - t0)))
            continue
        name = f"{target.metric}_bucket"
        now, then = _grouped(target, scrape, name, ("le",)), _grouped(target, first, name, ("le",))
        per_group: dict[Labels, list[tuple[float, float]]] = defaultdict(list)
        for key, value in now.items():
            group, bound = key[1][:-1], float(key[1][-1][1])
            per_group[group].append((bound, value - then.get(key, 0.0)))
        for group, buckets in per_group.items():
            value = _quantile(target.q, buckets)
            if not math.isnan(value):
                lines[_legend(target, group)].append((t, value))
    return lines


def _legend(target: Target, key: Iterable[tuple[str, str]]) -> str:
    legend = target.legend or target.metric
    for label, value in key:
        legend = legend.replace("{{" + label + "}}", value)
    return legend


def draw(samples: Path, png: Path, window: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scrapes = load(samples)
    rows = math.ceil(len(PANELS) / 2)
    plt.style.use("dark_background")
    figure, axes = plt.subplots(rows, 2, figsize=(16, 3.2 * rows), constrained_layout=True)
    figure.suptitle(f"MCP tasks on Temporal: {samples.parent.name} (make bench)", fontsize=14)
    for axis, panel in zip(axes.flat, PANELS, strict=False):
        axis.set_title(f"{panel.title} [{panel.unit}]", fontsize=10, loc="left")
        axis.grid(alpha=0.2)
        drawn = False
        for target in panel.targets:
            for legend, points in sorted(evaluate(target, scrapes[panel.source], window).items()):
                if points and any(v for _, v in points):
                    axis.plot([p[0] for p in points], [p[1] for p in points], label=legend)
                    drawn = True
        if drawn:
            axis.legend(fontsize=7, loc="upper left")
        else:
            axis.text(0.5, 0.5, "no data", ha="center", va="center", transform=axis.transAxes)
        axis.set_xlabel("seconds since the benchmark's server started", fontsize=8)
    for axis in list(axes.flat)[len(PANELS) :]:
        axis.remove()
    png.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(png, dpi=80)
    print(f"drew {len(PANELS)} panels into {png}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--dashboard", type=Path, help="write the Grafana dashboard JSON here")
    parser.add_argument("--samples", type=Path, help="samples.jsonl of bench/run.py --metrics")
    parser.add_argument("--png", type=Path, default=Path("docs/dashboard.png"))
    parser.add_argument("--window", type=float, default=10.0, help="rate window, seconds")
    options = parser.parse_args()
    if options.dashboard:
        options.dashboard.write_text(json.dumps(dashboard(), indent=2) + "\n")
        print(f"wrote {options.dashboard}")
    if options.samples:
        draw(options.samples, options.png, options.window)
    if not (options.dashboard or options.samples):
        parser.error("nothing to do: give --dashboard and/or --samples")


if __name__ == "__main__":
    main()
