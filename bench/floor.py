"""`make bench`: this server against the raw Temporal floor, every figure in the same run.

    make bench                                   # all phases, 10,000 parked approvals
    make bench ARGS="--parked 2000"              # a shorter run
    make bench ARGS="--parked 100000 --timeout 7200"  # the issue's large run (about 75 min here)
    make bench ARGS="--topology split"           # server, worker, Temporal as 3 processes
    make bench ARGS="--classic --tasks 1000"     # bench/run.py, the open approvals alone

It starts one stack on a fresh data dir (bench/floor_stack.py: `mcp-tasks dev`, the
conformance toolset plus the demo module, default settings, one bearer token per client) and
connects the raw `temporalio` client to the same Temporal (bench/floor_raw.py). Phases
(`--phases`, in this order; `get` reads what `create` made):

- create, get: tools/call → task and tasks/get at 1 and 16 clients against `start_workflow`
  and `describe()` (bench/floor_ops.py);
- lifecycle: 32 clients running 50 ms tasks to their end, polled at pollIntervalMs, against
  polling `describe()` at that interval and against `handle.result()`;
- cancel: tasks/cancel → `cancelled` seen, against `cancel()` + polling or `result()`;
- listen: a listen stream's notification after an answer, against the raw history long-poll;
  the CPU of 100 idle streams against none and against as many raw long-polls
  (bench/floor_listen.py);
- question: a team's workflow asks one question (the interactive contract), tasks/update
  answers it, the workflow sees it, against the same round trip in raw Temporal (a memo
  polled, a signal) (bench/floor_question.py);
- parked: N parked approvals: time to park all, RSS of each process idle and parked, tasks/get
  on a random sample at 1 and 16 clients against `describe()` (bench/floor_parked.py); then
  the raw floor parks its own `--raw-parked` approvals (raw `start_workflow` of the same
  workflow by as many creators) on the same Temporal, and the rates are compared;
- polling: hosts polling parked approvals at pollIntervalMs, on a stack whose replica follows
  the tasks (the default) and on one that does not, Temporal's frontend metrics counting the
  describes (bench/floor_polling.py: two three-process stacks of its own, one after the other);

then reads every task it created, which must be in its expected state (lost or wrong: must be
0; exit code 1 otherwise). A progress line goes to stderr every 10 s. Written: the JSON and the
markdown table to bench-results/, and this run's section of docs/benchmarks.md (`--docs`; ""
for none), which keeps the latest run of each number of parked approvals.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench import (
    floor_listen,
    floor_ops,
    floor_parked,
    floor_polling,
    floor_question,
    floor_report,
)
from bench.floor_clients import Clients, Ledger, Progress
from bench.floor_raw import RawFloor
from bench.floor_stack import TOPOLOGIES, floor_stack
from bench.load_clients import Poster, sample_peaks
from bench.raw_http import RawHttp
from bench.run import memory

PHASES = ("create", "get", "lifecycle", "cancel", "listen", "question", "parked", "polling")
NOTES = {
    "dev": "one `mcp-tasks dev`: HTTP server and worker in one process, Temporal its child",
    "split": "Temporal, `mcp-tasks server` and `mcp-tasks worker` as three processes",
}


def sizes(options: argparse.Namespace) -> dict[str, int]:
    return {
        "creates per level": options.creates,
        "reads per level": options.reads,
        "lifecycle clients": options.lifecycle_clients,
        "lifecycle tasks per client": options.lifecycle_tasks,
        "cancels": options.cancels,
        "listen rounds": options.listen_rounds,
        "idle listen streams": options.idle_streams,
        "question rounds": options.question_rounds,
        "parked": options.parked,
        "parked reads per level": options.parked_reads,
    }


async def bench(options: argparse.Namespace) -> dict[str, Any]:
    phases = set(options.phases) | ({"create"} if "get" in options.phases else set())
    listeners = floor_listen.principals_for(options.idle_streams)
    principals = 17 + options.lifecycle_clients + 1 + listeners + 1  # the last: questions
    principals += floor_parked.principals_for(options.parked)
    data_dir = Path(tempfile.mkdtemp(prefix="mcp-tasks-bench-"))
    load_before = os.getloadavg()[0]
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "topology": options.topology,
        "topology_note": NOTES[options.topology],
        "http_client": options.http,
        "data_dir": str(data_dir),
        "sizes": sizes(options),
    }
    async with floor_stack(options.topology, data_dir, principals) as stack:
        results["worker_process"], results["temporal_process"] = stack.worker, stack.temporal
        results["idle_rss_mib"] = memory(stack.pids)
        raw = await RawFloor.connect(stack.temporal_address)
        peaks: dict[str, float] = {}
        sampling = asyncio.create_task(sample_peaks(stack.pids, peaks))
        http = _http_client(options.http)
        try:
            clients, ledger = Clients(stack.url, stack.tokens, http), Ledger()
            with Progress() as progress:
                await _phases(options, phases, clients, raw, ledger, progress, results, stack.pids)
                results["lost"] = await floor_parked.count_lost(clients, ledger, progress)
            stats = clients.stats
            retried = {"HTTP 429": stats.rate_limited, "HTTP 503": stats.unavailable}
            results["retried"] = {status: dict(n) for status, n in retried.items() if n}
        finally:
            await http.aclose()
        sampling.cancel()
    results["peak_rss_mib"] = peaks
    results["exit_codes"] = stack.exit_codes
    results["machine"] = floor_report.machine(load_before, os.getloadavg()[0])
    return results


async def _phases(
    options: argparse.Namespace,
    phases: set[str],
    clients: Clients,
    raw: RawFloor,
    ledger: Ledger,
    progress: Progress,
    results: dict[str, Any],
    pids: dict[str, int],
) -> None:
    rounds = options.rounds
    if "create" in phases:
        owned: dict[int, floor_ops.Owned] = {}
        for level in (1, 16):
            progress.set(f"create at {level} client(s)", options.creates)
            figures, mine = await floor_ops.create(
                clients, raw, ledger, level, options.creates, rounds, progress
            )
            results[f"create_c{level}"] = figures
            owned[level] = mine
        if "get" in phases:
            for level in (1, 16):
                mine = owned[level]
                entries = [(owner, task_id) for owner, ids in mine.items() for task_id in ids]
                await floor_ops.wait_parked(clients, entries, progress, options.timeout)
                progress.set(f"tasks/get at {level} client(s), both sides", 2 * options.reads)
                results[f"get_c{level}"] = await floor_ops.reads(
                    clients, raw, ledger, mine, options.reads, rounds, progress
                )
    if "lifecycle" in phases:
        progress.set("lifecycle", options.lifecycle_clients * options.lifecycle_tasks * 3)
        results["lifecycle"] = await floor_ops.lifecycle(
            clients,
            raw,
            ledger,
            options.lifecycle_clients,
            options.lifecycle_tasks,
            0.05,
            progress,
        )
    if "cancel" in phases:
        results["cancel"] = await floor_ops.cancel(
            clients, raw, ledger, options.cancels, options.cancel_poll_ms / 1000, progress
        )
    if "listen" in phases:
        async with floor_listen.stream_client(options.idle_streams) as streams:
            notify = await floor_listen.notify(
                clients, raw, ledger, streams, options.listen_rounds, progress
            )
            idle = await floor_listen.idle(
                clients,
                raw,
                ledger,
                streams,
                options.idle_streams,
                options.idle_seconds,
                pids,
                progress,
            )
        results["listen"] = {"notify": notify, "idle": idle}
    if "question" in phases:
        results["question"] = await floor_question.round_trips(
            clients,
            raw.client,
            options.question_rounds,
            options.question_poll_ms / 1000,
            progress,
        )
    if "parked" in phases and options.parked:
        parked, created = await floor_parked.park(
            clients, ledger, options.parked, progress, options.timeout
        )
        results["parked_rss_mib"] = memory(pids)
        for level in (1, 16):
            progress.set(
                f"tasks/get of parked tasks at {level} client(s), both sides",
                2 * min(options.parked_reads, len(created)),
            )
            parked[f"get_c{level}"] = await floor_parked.sample_reads(
                clients, raw, ledger, created, options.parked_reads, level, rounds, progress
            )
        del created
        if options.raw_parked:
            parked["raw"] = await floor_parked.park_raw(
                raw, min(options.raw_parked, options.parked), progress, options.timeout
            )
        results["parked"] = parked
    if "polling" in phases:
        progress.set("polling: following the tasks, then not (two stacks of their own)", 0)
        sizes = options.polling_clients, options.polling_tasks
        results["polling"] = await floor_polling.polling(
            *sizes, options.polling_seconds, options.polling_changes
        )


def command() -> str:
    args = " ".join(shlex.quote(arg) for arg in sys.argv[1:])
    # Set by the Makefile's bench target (MAKELEVEL would also say so under `make test`).
    if os.environ.get("BENCH_VIA_MAKE"):
        return f'make bench ARGS="{args}"' if args else "make bench"
    return f"python -m bench.floor {args}".rstrip()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--topology", choices=TOPOLOGIES, default="dev")
    p.add_argument(
        "--http",
        choices=("raw", "httpx"),
        default="raw",
        help="the benchmark's HTTP client: bench/raw_http.py (lean), or httpx",
    )
    p.add_argument(
        "--phases",
        type=lambda s: s.split(","),
        default=list(PHASES),
        help=f"comma-separated, of {','.join(PHASES)}",
    )
    p.add_argument("--creates", type=int, default=400, help="per level and side")
    p.add_argument("--reads", type=int, default=2000, help="per level and side")
    p.add_argument("--rounds", type=int, default=4, help="interleaved rounds per measure")
    p.add_argument("--lifecycle-clients", type=int, default=32)
    p.add_argument("--lifecycle-tasks", type=int, default=4, help="per client and side")
    p.add_argument("--cancels", type=int, default=30)
    p.add_argument("--cancel-poll-ms", type=float, default=10)
    p.add_argument("--listen-rounds", type=int, default=40, help="answers, per side")
    p.add_argument("--idle-streams", type=int, default=100, help="at most 200 (per replica)")
    p.add_argument(
        "--idle-seconds", type=float, default=30, help="each CPU window of the idle streams"
    )
    p.add_argument("--question-rounds", type=int, default=20, help="questions, per side")
    p.add_argument(
        "--question-poll-ms",
        type=float,
        default=10,
        help="how often each side polls for the question",
    )
    p.add_argument("--parked", type=int, default=10_000)
    p.add_argument(
        "--raw-parked",
        type=int,
        default=10_000,
        help="approvals the raw floor parks (at most --parked; 0: none)",
    )
    p.add_argument("--parked-reads", type=int, default=2000, help="per level and side")
    p.add_argument("--polling-clients", type=int, default=20)
    p.add_argument("--polling-tasks", type=int, default=10, help="parked approvals per client")
    p.add_argument("--polling-seconds", type=float, default=40, help="the window measured")
    changes_help = "answers signalled elsewhere, timed to tasks/get"
    p.add_argument("--polling-changes", type=int, default=40, help=changes_help)
    p.add_argument(
        "--timeout",
        type=float,
        default=3600,
        metavar="SECONDS",
        help="the longest wait for all tasks to park",
    )
    p.add_argument("--out", type=Path, default=Path("bench-results"))
    p.add_argument("--docs", default="docs/benchmarks.md", help='"" writes no docs page')
    return p


def _http_client(kind: str) -> Poster:
    """The benchmark clients' HTTP client (bench/raw_http.py says why a lean one)."""
    if kind == "httpx":
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        return httpx.AsyncClient(timeout=60, limits=limits)
    return RawHttp(limit=64)


def main() -> None:
    if "--classic" in sys.argv:  # bench/run.py as `make bench` ran it before
        from bench import run

        sys.argv.remove("--classic")
        run.main()
        return
    options = parser().parse_args()
    unknown = set(options.phases) - set(PHASES)
    if unknown:
        raise SystemExit(f"unknown phases: {sorted(unknown)}; choose from {', '.join(PHASES)}")
    results = asyncio.run(bench(options))
    results["command"] = command()
    table = floor_report.markdown(results)
    options.out.mkdir(parents=True, exist_ok=True)
    stem = options.out / f"bench-floor-{time.strftime('%Y%m%dT%H%M%S')}"
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2))
    stem.with_suffix(".md").write_text(table + "\n")
    if options.docs:
        docs = Path(options.docs)
        existing = docs.read_text() if docs.exists() else ""
        docs.write_text(floor_report.document(results, results["command"], existing))
    print(table)
    print(f"written to {stem}.json and {stem}.md" + (f", and {options.docs}" * bool(options.docs)))
    if results["lost"]["lost_or_wrong"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
