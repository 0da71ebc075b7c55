"""What `synchronous=FULL` costs the embedded Temporal against `synchronous=NORMAL`.

    python -m bench.sqlite_sync --starts 200 --rounds 2
    python -m bench.sqlite_sync --starts 100 --rounds 1 --count-fsyncs   # needs strace

For each round and each setting, runs a throwaway Temporal dev server on a fresh data dir and
starts `starts` workflows one after another (each start is a committed SQLite write, synced to
disk with FULL before Temporal answers), then `starts` more from 16 concurrent callers. No
worker runs: only Temporal's writes are measured. Prints p50/p99 of one start and the starts
per second of each setting, round by round, as JSON. With `--count-fsyncs`, `strace -c` counts
the fsync/fdatasync calls of the Temporal server during the one-after-another starts (strace
slows every call it traces: read only the counts of such a run, not its timings).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client

from bench.run import percentiles, timed_many
from mcp_server.runtime.devserver import Synchronous, TemporalDevServer, free_port


def _strace(pid: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            ["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-p", str(pid)], stderr=out
        )


def _syncs(tracer: subprocess.Popen[bytes], log: Path) -> dict[str, float]:
    tracer.send_signal(2)  # strace -c prints its table on SIGINT
    tracer.wait(30)
    found = re.search(r"^\s*[\d.]+\s+([\d.]+)\s+\d+\s+(\d+).*total$", log.read_text(), re.M)
    seconds, calls = (float(found[1]), int(found[2])) if found else (0.0, 0)
    return {"calls": calls, "seconds": seconds}


async def measure(synchronous: Synchronous, starts: int, count_fsyncs: bool) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix=f"sqlite-{synchronous}-"))
    server = TemporalDevServer(data_dir, port=free_port(), synchronous=synchronous)
    server.start()
    try:
        await server.wait_ready()
        client = await Client.connect(server.address)

        async def start(index: int, prefix: str) -> None:
            await client.start_workflow(
                "NotRunHere", id=f"{prefix}-{index}", task_queue="nobody-polls"
            )

        results: dict[str, Any] = {"sqlite": synchronous}
        for concurrency in (1, 16):
            tracer = None
            if count_fsyncs and concurrency == 1 and server.process is not None:
                tracer = _strace(server.process.pid, data_dir / "strace.txt")
                await asyncio.sleep(1)  # attached
            began = time.perf_counter()
            samples = await timed_many(
                starts, concurrency, lambda i, c=concurrency: start(i, f"c{c}")
            )
            results[f"start_c{concurrency}"] = {
                **percentiles(samples),
                "per_second": round(starts / (time.perf_counter() - began), 1),
            }
            if tracer is not None:
                results["fsyncs_c1"] = _syncs(tracer, data_dir / "strace.txt")
        return results
    finally:
        server.stop()


async def main(starts: int, rounds: int, count_fsyncs: bool) -> list[dict[str, Any]]:
    measured = []
    for _ in range(rounds):
        for synchronous in ("full", "normal"):
            measured.append(await measure(synchronous, starts, count_fsyncs))
    return measured


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--starts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--count-fsyncs", action="store_true")
    options = parser.parse_args()
    measured = asyncio.run(main(options.starts, options.rounds, options.count_fsyncs))
    print(json.dumps(measured, indent=2))
