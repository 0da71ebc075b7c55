"""Benchmark: the open-task quota check on the create path, before and after.

    python -m bench.quota                    # 1,000 open tasks, 500 calls per measure
    python -m bench.quota --open 0 --calls 200

It starts a Temporal dev server on a temporary data dir and `mcp-tasks worker` as its own
process; parks `--open` running workflows owned by one principal (on a task queue no worker
polls, so they stay open and cost the worker nothing), and holds as many slots in that
principal's quota workflow. Then it times, at 1 and at 16 concurrent callers of that one
principal:
- `count_open`: the visibility-store count the quota used before (`McpOwner=… AND
  ExecutionStatus="Running"`), which lags and so let bursts through;
- `reserve`: the reservation the create path makes now (update-with-start on the quota
  workflow, through a worker), with a limit high enough that every call is granted.
Results are printed and written to bench-results/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

from bench.run import percentiles, spawn, timed_many
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.tasks.quota import QuotaReservations
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.temporal.connection import connect
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_OWNER
from mcp_tasks.settings import Settings

QUEUE = "bench-quota"
PARKED_QUEUE = "bench-quota-parked"  # polled by no worker: its workflows stay running


async def bench(open_tasks: int, calls: int) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="mcp-tasks-bench-quota-"))
    temporal = TemporalDevServer(data_dir, port=free_port())
    temporal.start()
    env = {
        **os.environ,
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_TASK_QUEUE": QUEUE,
        "MCP_TASKS_TOOLSET": "demo",
    }
    results: dict[str, Any] = {"open_tasks": open_tasks, "calls": calls, "cpus": os.cpu_count()}
    worker = None
    try:
        await temporal.wait_ready()
        client = await connect(Settings(temporal_address=temporal.address, task_queue=QUEUE))
        worker = spawn("worker", data_dir / "worker.log", env)
        owner = uuid.uuid4().hex
        owned = TypedSearchAttributes(
            [SearchAttributePair(SearchAttributeKey.for_keyword(SEARCH_ATTRIBUTE_OWNER), owner)]
        )
        parked = [f"mcp-task-parked-{i}" for i in range(open_tasks)]
        gate = asyncio.Semaphore(32)

        async def park(task_id: str) -> None:
            async with gate:
                await client.start_workflow(
                    "Parked", id=task_id, task_queue=PARKED_QUEUE, search_attributes=owned
                )

        await asyncio.gather(*(park(task_id) for task_id in parked))
        store = TemporalTaskStore(client, QUEUE)
        deadline = time.monotonic() + 60
        while (counted := await store.count_open(owner)) < open_tasks:
            if time.monotonic() > deadline:
                raise RuntimeError(f"visibility shows {counted} of {open_tasks} parked tasks")
            await asyncio.sleep(0.2)
        quota = QuotaReservations(client, QUEUE, wait_s=60)  # the first waits for the worker
        limit = open_tasks + 4 * calls + 1
        for start in range(0, open_tasks, 200):
            await asyncio.gather(*(quota.reserve(owner, t, limit) for t in parked[start:][:200]))

        async def count(index: int) -> None:
            await store.count_open(owner)

        async def reserve(index: int) -> None:
            await quota.reserve(owner, f"mcp-task-{uuid.uuid4().hex}", limit)

        for concurrency in (1, 16):
            for name, job in (("count_open", count), ("reserve", reserve)):
                await timed_many(min(calls, 50), concurrency, job)  # warm-up, not measured
                started = time.perf_counter()
                samples = await timed_many(calls, concurrency, job)
                measured = percentiles(samples)
                measured["per_second"] = round(calls / (time.perf_counter() - started), 1)
                results[f"{name}_c{concurrency}"] = measured
    finally:
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
        temporal.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--open", type=int, default=1000, help="open tasks of the principal")
    parser.add_argument("--calls", type=int, default=500, help="calls per measure")
    options = parser.parse_args()
    results = asyncio.run(bench(options.open, options.calls))
    out = Path("bench-results")
    out.mkdir(exist_ok=True)
    path = out / f"bench-quota-{time.strftime('%Y%m%dT%H%M%S')}-{options.open}.json"
    path.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
