"""Benchmark: open approvals on `mcp-tasks dev`, measured from outside over HTTP.

    make bench                      # 1,000 open approvals
    make bench ARGS="--tasks 10000"

It starts a Temporal dev server on a temporary data dir, and `mcp-tasks worker` and
`mcp-tasks server` (toolset demo) as separate processes; creates N `request_approval` tasks
(each one a parked Temporal workflow waiting for a human); then measures tools/call (task
creation) latency, the time until all N are `input_required`, tasks/get latency at 1 and 16
concurrent clients, and the resident memory of each of the three processes, idle and with the
N approvals open. Results are printed and written to bench-results/.

With `--metrics DIR` it also scrapes the server's /metrics and the worker's Temporal SDK
metrics every `--scrape-every` seconds into DIR/samples.jsonl, answers and cancels a tenth of
the approvals each at the end (so every panel has data), and leaves the last scrapes behind as
DIR/server.prom and DIR/worker.prom; deploy/grafana/render_panels.py draws the dashboard from
them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_tasks.settings import Settings

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    },
}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process `pid` so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "n": len(ordered),
        "p50_ms": round(pick(0.50) * 1000, 2),
        "p99_ms": round(pick(0.99) * 1000, 2),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
    }


class Client:
    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http, self.url = http, url

    async def rpc(self, method: str, params: dict[str, Any], name: str | None = None) -> Any:
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if name:
            headers["Mcp-Name"] = name
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
        response = await self.http.post(self.url, json=body, headers=headers)
        payload = response.json()
        if "error" in payload:
            raise RuntimeError(f"{method}: {payload['error']}")
        return payload["result"]


async def timed_many(count: int, concurrency: int, job: Any) -> list[float]:
    samples: list[float] = []
    queue = iter(range(count))

    async def runner() -> None:
        for index in queue:
            started = time.perf_counter()
            await job(index)
            samples.append(time.perf_counter() - started)

    await asyncio.gather(*(runner() for _ in range(concurrency)))
    return samples


def spawn(command: str, log: Path, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(Path(sys.executable).parent / "mcp-tasks"), command, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )


async def wait_ready(
    http: httpx.AsyncClient, probe: str, parts: list[subprocess.Popen[bytes]], data_dir: Path
) -> None:
    """Until `probe` answers 200; a part that exits, or 60 s, is a failed start."""
    deadline = time.monotonic() + 60
    while True:
        try:
            if (await http.get(probe)).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or any(p.poll() is not None for p in parts):
            raise RuntimeError(f"the server or worker did not start; see {data_dir}")
        await asyncio.sleep(0.2)


@dataclass
class Split:
    """The three processes of `split_stack`; the exit codes are read after it has stopped them."""

    temporal_pid: int
    worker: subprocess.Popen[bytes]
    server: subprocess.Popen[bytes]

    def pids(self) -> dict[str, int]:
        return {"temporal": self.temporal_pid, "worker": self.worker.pid, "server": self.server.pid}


@asynccontextmanager
async def split_stack(
    temporal: TemporalDevServer,
    data_dir: Path,
    env: dict[str, str],
    worker_env: dict[str, str] | None = None,
) -> AsyncIterator[Split]:
    """Temporal (already started), `mcp-tasks worker` and `mcp-tasks server` as three processes,
    the server on `env["MCP_TASKS_PORT"]`, ready when its /readyz answers 200. On exit SIGTERMs
    the two, waits for them, and stops Temporal."""
    parts: list[subprocess.Popen[bytes]] = []
    try:
        await temporal.wait_ready()
        assert temporal.process is not None
        parts = [
            spawn("worker", data_dir / "worker.log", worker_env or env),
            spawn("server", data_dir / "server.log", env),
        ]
        probe = f"http://127.0.0.1:{env['MCP_TASKS_PORT']}/readyz"
        async with httpx.AsyncClient(timeout=10) as http:
            await wait_ready(http, probe, parts, data_dir)
        yield Split(temporal.process.pid, worker=parts[0], server=parts[1])
    finally:
        for part in parts:
            part.send_signal(signal.SIGTERM)
        for part in parts:
            part.wait(60)
        temporal.stop()


def memory(processes: dict[str, int]) -> dict[str, float]:
    return {name: round(rss_mib(pid), 1) for name, pid in processes.items()}


async def bench(
    tasks: int, reads: int, metrics_dir: Path | None = None, scrape_every: float = 2.0
) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="mcp-tasks-bench-"))
    # MCP_TASKS_SQLITE_SYNCHRONOUS=normal measures the faster, less durable SQLite setting.
    synchronous = Settings.from_env().sqlite_synchronous
    temporal = TemporalDevServer(data_dir, port=free_port(), synchronous=synchronous)
    temporal.start()
    port = free_port()
    worker_metrics_port = free_port()
    env = {
        **os.environ,
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_TOOLSET": "demo",
        "MCP_TASKS_PORT": str(port),
        "MCP_TASKS_MAX_OPEN_TASKS_PER_PRINCIPAL": "0",  # every task has the same owner here
    }
    if metrics_dir is not None:
        env["MCP_TASKS_METRICS_REFRESH_S"] = str(scrape_every)
    worker_env = {**env, "MCP_TASKS_WORKER_METRICS_PORT": str(worker_metrics_port)}
    results: dict[str, Any] = {"tasks": tasks, "cpus": os.cpu_count(), "sqlite": synchronous}
    stack = split_stack(temporal, data_dir, env, worker_env if metrics_dir else None)
    async with stack as split:
        pids = split.pids()
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=64)) as http:
            client = Client(http, f"http://127.0.0.1:{port}/mcp")
            scraping = None
            if metrics_dir is not None:
                sources = {
                    "server": f"http://127.0.0.1:{port}/metrics",
                    "worker": f"http://127.0.0.1:{worker_metrics_port}/metrics",
                }
                scraping = asyncio.create_task(scrape(http, sources, metrics_dir, scrape_every))
            results["idle_rss_mib"] = memory(pids)
            ids: list[str] = []

            async def create(index: int) -> None:
                arguments = {"message": f"Approve change #{index}?"}
                params = {"name": "request_approval", "arguments": arguments}
                ids.append((await client.rpc("tools/call", params, "request_approval"))["taskId"])

            started = time.perf_counter()
            results["create"] = percentiles(await timed_many(tasks, 16, create))
            results["create"]["per_second"] = round(tasks / (time.perf_counter() - started), 1)

            pending = set(ids)
            while pending:
                batch = random.sample(sorted(pending), min(len(pending), 200))
                for task_id in batch:
                    task = await client.rpc("tasks/get", {"taskId": task_id}, task_id)
                    if task["status"] == "input_required":
                        pending.discard(task_id)
                if pending:  # as a client does: a task read again waits its pollIntervalMs
                    await asyncio.sleep(task.get("pollIntervalMs", 1000) / 1000)
            results["all_parked_after_s"] = round(time.perf_counter() - started, 1)

            async def get(index: int) -> None:
                task_id = random.choice(ids)
                task = await client.rpc("tasks/get", {"taskId": task_id}, task_id)
                assert task["status"] == "input_required"

            for concurrency in (1, 16):
                key = f"tasks_get_c{concurrency}"
                results[key] = percentiles(await timed_many(reads, concurrency, get))
            results["parked_rss_mib"] = memory(pids)
            if scraping is not None:
                await finish_some(client, ids)
                await asyncio.sleep(3 * scrape_every)  # the gauges catch up
                scraping.cancel()
    return results


async def scrape(
    http: httpx.AsyncClient, sources: dict[str, str], into: Path, every: float
) -> None:
    """Every `every` seconds, each source's Prometheus text as one JSON line per source
    (elapsed seconds, source, text) in samples.jsonl; the last one also as SOURCE.prom."""
    into.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with (into / "samples.jsonl").open("w") as out:
        while True:
            for source, url in sources.items():
                try:
                    text = (await http.get(url)).text
                except httpx.TransportError:
                    continue
                line = {"t": round(time.monotonic() - started, 2), "source": source, "text": text}
                out.write(json.dumps(line) + "\n")
                out.flush()
                (into / f"{source}.prom").write_text(text)
            await asyncio.sleep(every)


async def finish_some(client: Client, ids: list[str]) -> None:
    """Answer a tenth of the approvals and cancel another tenth (tasks/update, tasks/cancel)."""
    tenth = max(1, len(ids) // 10)
    answer = {"decision": {"action": "accept", "content": {"decision": "approve"}}}
    for task_id in ids[:tenth]:
        params = {"taskId": task_id, "inputResponses": answer}
        await client.rpc("tasks/update", params, task_id)
    for task_id in ids[tenth : 2 * tenth]:
        await client.rpc("tasks/cancel", {"taskId": task_id}, task_id)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument(
        "--metrics",
        type=Path,
        default=None,
        metavar="DIR",
        help="scrape the server's and the worker's metrics into DIR",
    )
    parser.add_argument("--scrape-every", type=float, default=2.0, metavar="SECONDS")
    options = parser.parse_args()
    results = asyncio.run(
        bench(options.tasks, options.reads, options.metrics, options.scrape_every)
    )
    out = Path("bench-results")
    out.mkdir(exist_ok=True)
    path = out / f"bench-{time.strftime('%Y%m%dT%H%M%S')}-{options.tasks}.json"
    path.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
