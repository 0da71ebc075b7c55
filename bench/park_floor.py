"""The floor under parking approvals: raw starts and this project's worker, no MCP server.

    python -m bench.park_floor --approvals 1000 --rounds 2
    python -m bench.park_floor --approvals 1000 --synchronous normal
    python -m bench.park_floor --approvals 1000 --runner unsandboxed

Runs a throwaway Temporal dev server on a fresh data dir and, in this process, the worker
`mcp-tasks` runs (runtime/worker.py, the conformance toolset plus the demo module, as `make
bench` loads them). Each round starts `approvals` `request_approval` workflows from 16
concurrent creators with the raw client (bench/floor_raw.py, the server's start done by hand),
then reads them with describe() until every one is at its question (the raw floor of
`make bench`'s parked phase, bench/floor_parked.py). Prints, per round, the
approvals parked per second and the CPU time per parked approval of this process (worker and
raw client) and of Temporal, read from /proc: which of the two is the limit, and what a
runner or an SQLite setting changes. `--runner unsandboxed` is for measuring only; the worker
always runs task workflows in the sandbox.
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

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner

from bench.floor_clients import Progress
from bench.floor_parked import park_raw
from bench.floor_raw import RawFloor
from bench.run import cpu_seconds
from mcp_server.runtime.devserver import Synchronous, TemporalDevServer, free_port
from mcp_server.runtime.worker import build_worker
from mcp_tasks.settings import Settings


async def measure(
    approvals: int, rounds: int, synchronous: Synchronous, runner: str
) -> list[dict[str, Any]]:
    temporal = TemporalDevServer(
        Path(tempfile.mkdtemp()), port=free_port(), synchronous=synchronous
    )
    temporal.start()
    try:
        await temporal.wait_ready()
        assert temporal.process is not None
        raw = RawFloor(await Client.connect(temporal.address))
        chosen = UnsandboxedWorkflowRunner() if runner == "unsandboxed" else None
        worker = build_worker(raw.client, Settings.from_env({}), raw.registry, chosen)
        figures = []
        async with worker:
            for number in range(rounds):
                pids = {"this process": os.getpid(), "temporal": temporal.process.pid}
                before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                began = time.perf_counter()
                parked = await park_raw(raw, approvals, Progress(every=3600), timeout_s=600)
                if parked["never_parked"]:
                    raise RuntimeError(f"{parked['never_parked']} approvals never parked")
                wall = time.perf_counter() - began
                cpu_ms = {
                    name: round((cpu_seconds(pid) - before[name]) * 1000 / approvals, 1)
                    for name, pid in pids.items()
                }
                figures.append(
                    {
                        "round": number,
                        "approvals": approvals,
                        "parked_per_s": round(approvals / wall, 1),
                        "cpu_ms_per_parked": cpu_ms,
                    }
                )
                print(json.dumps(figures[-1]), flush=True)
        return figures
    finally:
        temporal.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--approvals", type=int, default=1000, help="per round")
    p.add_argument("--rounds", type=int, default=2, help="each on a Temporal holding the last")
    p.add_argument("--synchronous", choices=["full", "normal"], default="full")
    p.add_argument("--runner", choices=["sandboxed", "unsandboxed"], default="sandboxed")
    options = p.parse_args()
    asyncio.run(measure(options.approvals, options.rounds, options.synchronous, options.runner))


if __name__ == "__main__":
    main()
