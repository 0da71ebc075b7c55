"""Load: N tasks in flight at once, M clients polling them at the server's pollIntervalMs.

    make load                                  # 1,000 tasks, 100 clients: server, worker
                                               # and Temporal as 3 processes (load_split.py)
    make load ARGS="--topology dev"            # the same on one `mcp-tasks dev`
    make load ARGS="--tasks 60 --clients 10"   # the short form CI runs (tests/test_load.py)
    python -m bench.load --url http://127.0.0.1:8000/mcp --token T1 --token T2 ...

Without --url it starts its own stack on a temporary data dir (`--topology split`, the default:
a Temporal dev server, `mcp-tasks server --auth tokens` and `mcp-tasks worker`, three processes;
`--topology dev`: one `mcp-tasks dev --auth tokens`, HTTP server and worker on one event loop,
with its Temporal child), with one bearer
token (one principal) per client, so that each client has its own open-task quota and its own
tasks/update bucket, as separate users would; the server's limits stay at their defaults.

Each client creates its share of `multi_step_job` tasks (`require_approval`, one step of
`--step-seconds`), and polls every task with tasks/get from its creation on, sleeping the
`pollIntervalMs` of the last answer between polls, as a real client does. Once every task of
every client exists (so all N are in flight together) a client answers each of its tasks with
tasks/update at the first poll after `--answer-after` polls that showed it `input_required`,
then polls it to its end.

Reported: lost tasks (any that did not end `completed` with its own name, approved and one step:
must be 0), HTTP statuses by count (5xx must be 0), 429s by method (a client honouring the
limits should see none; each is retried after its Retry-After), p50/p99 of tasks/get and
tools/call, the peak RSS of each process (with `dev`: one Python process running the HTTP server
and the worker, and its Temporal child; sampled from /proc every 0.5 s) and the wall time.
Printed as JSON and a markdown table and written to bench-results/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.dev_stack import dev_stack
from bench.load_clients import run_load, sample_peaks
from bench.load_split import on_split
from mcp_server.runtime.tokens import add_token


async def on_dev(
    tasks: int, clients: int, data_dir: Path | None = None, **load: Any
) -> dict[str, Any]:
    """Start `mcp-tasks dev --auth tokens` (on `data_dir`, default a new temporary one) with one
    token per client, run the load on it, stop it with SIGTERM (as Ctrl-C does)."""
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="mcp-tasks-load-"))
    tokens_file = data_dir / "tokens.json"
    tokens: list[str | None] = [
        add_token(tokens_file, f"load-client-{i}", []) for i in range(clients)
    ]
    env = {**os.environ, "MCP_TASKS_TOKENS_FILE": str(tokens_file)}
    peaks: dict[str, float] = {}
    cpu: dict[str, float] = {}
    async with dev_stack(data_dir, env, "--auth", "tokens") as dev:
        sampling = asyncio.create_task(sample_peaks(dev.pids(), peaks, cpu=cpu))
        results = await run_load(dev.url, tokens, tasks, **load)
        sampling.cancel()
    results["peak_rss_mib"] = peaks
    results["cpu_s"] = cpu
    results["topology"] = "dev"
    results["dev_exit_code"] = dev.process.returncode
    results["data_dir"] = str(data_dir)
    return results


def markdown(results: dict[str, Any]) -> str:
    get, call = results["tasks_get"], results["tools_call"]
    rows = [
        ("tasks in flight at once (peak)", f"{results['peak_in_flight']:,}"),
        ("clients (one principal each)", str(results["clients"])),
        ("lost tasks (acknowledged, not ended as expected)", str(results["lost"])),
        ("tools/call refused (nothing acknowledged)", str(results["not_created"])),
        ("HTTP 5xx", str(results["http_5xx"])),
        ("HTTP statuses", ", ".join(f"{k}: {v:,}" for k, v in results["http_statuses"].items())),
        ("429 retried, by method", json.dumps(results["rate_limited_429"])),
        ("503 retried, by method", json.dumps(results["unavailable_503_retried"])),
        ("tasks/get p50 / p99", f"{get['p50_ms']} ms / {get['p99_ms']} ms (n = {get['n']:,})"),
        ("tools/call p50 / p99", f"{call['p50_ms']} ms / {call['p99_ms']} ms"),
        ("all tasks created after", f"{results['all_created_after_s']} s"),
        ("wall time", f"{results['wall_s']} s"),
        (
            "1-min load average before / after",
            "{before} / {after}".format(**results["load_average_1min"]),
        ),
    ]
    for name, mib in results.get("peak_rss_mib", {}).items():
        rows.append((f"peak RSS, {name}", f"{mib} MiB"))
    for name, seconds in results.get("cpu_s", {}).items():
        rows.append((f"CPU, {name}", f"{seconds} s"))
    server = results.get("server_metrics")
    if server:
        rows.append(("server's task reads by source", json.dumps(server["task_reads"])))
        rows.append(("Temporal reads per tasks/get", str(server["temporal_reads_per_tasks_get"])))
        for operation, side in server["latency_by_operation"].items():
            rows.append(
                (
                    f"{operation} as the server measured it: n, p50 / p99 (bucket bound)",
                    f"{side['n']:,.0f}, <= {side['p50_le_s']} s / <= {side['p99_le_s']} s",
                )
            )
    if "temporal_requests" in results:
        top = list(results["temporal_requests"].items())[:8]
        rows.append(
            ("Temporal frontend requests (most first)", ", ".join(f"{k}: {v:,}" for k, v in top))
        )
    if "load_clients_cpu_s" in results:
        rows.append(
            ("CPU, the load's clients (this process)", f"{results['load_clients_cpu_s']} s")
        )
    return "\n".join(["| measure | value |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--answer-after", type=int, default=2, metavar="POLLS")
    parser.add_argument("--step-seconds", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=1800, metavar="SECONDS")
    parser.add_argument(
        "--topology",
        choices=("split", "dev"),
        default="split",
        help="the stack to start without --url (see above)",
    )
    parser.add_argument(
        "--http",
        choices=("raw", "httpx"),
        default="raw",
        help="the clients' HTTP client: bench/raw_http.py (lean: the clients share the 2 cores "
        "with what they measure), or httpx",
    )
    parser.add_argument("--url", default=None, help="load this server instead of starting one")
    parser.add_argument(
        "--token", action="append", default=[], help="a bearer token for --url (repeatable)"
    )
    options = parser.parse_args()
    load = {
        "answer_after": options.answer_after,
        "step_seconds": options.step_seconds,
        "timeout_s": options.timeout,
        "http": options.http,
    }
    if options.url is None and options.topology == "split":
        results = asyncio.run(on_split(options.tasks, options.clients, **load))
    elif options.url is None:
        results = asyncio.run(on_dev(options.tasks, options.clients, **load))
    else:
        given: list[str | None] = list(options.token) or [None]
        tokens = [given[i % len(given)] for i in range(options.clients)]
        results = asyncio.run(run_load(options.url, tokens, options.tasks, **load))
    out = Path("bench-results")
    out.mkdir(exist_ok=True)
    path = out / f"load-{time.strftime('%Y%m%dT%H%M%S')}-{options.tasks}.json"
    path.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    print(markdown(results))
    print(f"written to {path}")
    if results["lost"] or results["not_created"] or results["http_5xx"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
