"""`make load` on the split topology: a Temporal dev server, one `mcp-tasks server` and one
`mcp-tasks worker`, each its own process (as bench/run.py starts them for `make bench`, and as
production runs them), with `--auth tokens` and one token per client. The peak RSS of each of
the three processes is sampled from /proc while the load runs."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench.load_clients import run_load, sample_peaks
from bench.run import split_stack
from bench.unit_costs import MeteredTemporal, counters
from mcp_server.runtime.devserver import free_port
from mcp_server.runtime.tokens import add_token
from mcp_tasks.settings import Settings


async def server_figures(url: str) -> dict[str, Any]:
    """What the server itself counted: its task reads by source (followed: no Temporal call),
    the Temporal reads per tasks/get, tasks/get's latency as it measured it (from the request
    to its answer: the load's clients add their own loop's delay to theirs) and its calls to
    Temporal by operation, with their latency."""
    async with httpx.AsyncClient(timeout=30) as http:
        text = (await http.get(url)).text
    reads: dict[str, float] = {}
    gets = 0.0
    latency: dict[str, list[tuple[float, float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "mcp_tasks_task_reads_total":
                reads[sample.labels["source"]] = sample.value
            elif sample.name == "mcp_tasks_requests_total":
                if sample.labels["method"] == "tasks/get":
                    gets += sample.value
            elif sample.name == "mcp_tasks_request_duration_seconds_bucket":
                if sample.labels["operation"] == "get":  # tasks/get (observability/metrics.py)
                    latency.setdefault("tasks/get", []).append(
                        (float(sample.labels["le"]), sample.value)
                    )
            elif sample.name == "mcp_tasks_temporal_request_duration_seconds_bucket":
                latency.setdefault(f"temporal {sample.labels['operation']}", []).append(
                    (float(sample.labels["le"]), sample.value)
                )
    temporal_reads = reads.get("temporal", 0.0)
    return {
        "task_reads": reads,
        "temporal_reads_per_tasks_get": round(temporal_reads / gets, 3) if gets else None,
        "latency_by_operation": {
            name: bucket_percentiles(sorted(buckets)) for name, buckets in sorted(latency.items())
        },
    }


async def temporal_figures(url: str) -> dict[str, int]:
    """The requests Temporal's frontend served in the whole run, by operation (its own
    `service_requests`), most first: who the load kept Temporal busy with."""
    async with httpx.AsyncClient(timeout=30) as http:
        totals = await counters(http, url)
    frontend = {
        name.split(":", 1)[1]: count
        for name, count in totals.items()
        if name.startswith("frontend:")
    }
    return dict(sorted(frontend.items(), key=lambda item: -item[1]))


def bucket_percentiles(buckets: list[tuple[float, float]]) -> dict[str, float | None]:
    """How many, and the upper bound (seconds) of the histogram bucket each percentile falls
    in."""
    total = buckets[-1][1] if buckets else 0.0
    figures: dict[str, float | None] = {"n": total}
    for name, share in (("p50_le_s", 0.5), ("p99_le_s", 0.99)):
        figures[name] = next(
            (le for le, count in buckets if total and count >= share * total), None
        )
    return figures


async def on_split(
    tasks: int, clients: int, data_dir: Path | None = None, **load: Any
) -> dict[str, Any]:
    """Start Temporal, `mcp-tasks worker` and `mcp-tasks server --auth tokens` on `data_dir`
    (default a new temporary one), run the load, stop the two with SIGTERM, then Temporal."""
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="mcp-tasks-load-"))
    tokens_file = data_dir / "tokens.json"
    tokens: list[str | None] = [
        add_token(tokens_file, f"load-client-{i}", []) for i in range(clients)
    ]
    synchronous = Settings.from_env().sqlite_synchronous
    (data_dir / "temporal").mkdir(exist_ok=True)
    temporal = MeteredTemporal(data_dir / "temporal", port=free_port(), synchronous=synchronous)
    temporal.start()
    port, metrics_port = free_port(), free_port()
    env = {
        **os.environ,
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_TOOLSET": "demo",
        "MCP_TASKS_PORT": str(port),
        "MCP_TASKS_AUTH": "tokens",
        "MCP_TASKS_TOKENS_FILE": str(tokens_file),
        # /metrics unauthenticated on a port of its own, as production scrapes it.
        "MCP_TASKS_METRICS_PORT": str(metrics_port),
    }
    peaks: dict[str, float] = {}
    cpu: dict[str, float] = {}
    async with split_stack(temporal, data_dir, env) as split:
        named = {
            "mcp-tasks server": split.server.pid,
            "mcp-tasks worker": split.worker.pid,
            "temporal (dev server)": split.temporal_pid,
        }
        sampling = asyncio.create_task(sample_peaks(named, peaks, cpu=cpu))
        results = await run_load(f"http://127.0.0.1:{port}/mcp", tokens, tasks, **load)
        sampling.cancel()
        results["server_metrics"] = await server_figures(f"http://127.0.0.1:{metrics_port}/metrics")
        results["temporal_requests"] = await temporal_figures(
            f"http://127.0.0.1:{temporal.metrics_port}/metrics"
        )
    results["topology"] = "split"
    results["peak_rss_mib"] = peaks
    results["cpu_s"] = cpu
    results["exit_codes"] = {"server": split.server.returncode, "worker": split.worker.returncode}
    results["data_dir"] = str(data_dir)
    return results
