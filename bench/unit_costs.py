"""What one parked approval, one approved deploy and one poll cost Temporal, for the capacity
plan (docs/operations/capacity.md): `python -m bench.unit_costs`.

Temporal (a dev server with its Prometheus metrics on), `mcp-tasks worker` and `mcp-tasks
server` run as three processes (the demo toolset). Measured:

- each kind of task's workflow history once it is parked or closed: events, and bytes as
  Temporal stores them (the serialized `HistoryEvent`s), its memo and search attributes;
- what Temporal did for it: its frontend's requests by operation (`service_requests`) and its
  persistence operations (`persistence_requests`), as deltas of the dev server's counters
  around the action, with nothing else running;
- Temporal's and the worker's CPU seconds and RSS around the same actions.

History, memo and request counts do not depend on the machine's load; CPU seconds do, a little
(a loaded machine adds context switches), and are the least exact figures here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from bench.load_clients import LoadClient, Stats
from bench.run import cpu_seconds, rss_mib, split_stack
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.tokens import add_token

# request_approval's answer, and deploy's (its approval gate asks a yes/no `approve`).
APPROVE = {"action": "accept", "content": {"decision": "approve"}}
APPROVE_STEP = {"action": "accept", "content": {"approve": True}}
IDLE_S = 30.0
COUNTER = re.compile(r"^(service_requests|persistence_requests)\{(.*)\} ([0-9.e+]+)$")


class MeteredTemporal(TemporalDevServer):
    """The dev server with its Prometheus metrics on `metrics_port`."""

    metrics_port = free_port()

    def command(self) -> list[str]:
        return [*super().command(), "--metrics-port", str(self.metrics_port)]


@dataclass
class Stack:
    url: str
    client: Client
    metrics: str
    pids: dict[str, int]
    token: str
    deploy_token: str  # a principal of its own: its quota holds nothing but the deploy


@asynccontextmanager
async def stack(data_dir: Path, extra_env: dict[str, str] | None = None) -> AsyncIterator[Stack]:
    temporal = MeteredTemporal(data_dir / "temporal", port=free_port())
    (data_dir / "temporal").mkdir()
    temporal.start()
    tokens = data_dir / "tokens.json"
    token = add_token(tokens, "capacity", ["deploy"])
    deploy_token = add_token(tokens, "capacity-deploy", ["deploy"])
    port = free_port()
    root = str(Path(__file__).resolve().parents[1])
    env = {
        **os.environ,
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_PORT": str(port),
        "MCP_TASKS_AUTH": "tokens",
        "MCP_TASKS_TOKENS_FILE": str(tokens),
        "MCP_TASKS_TOOLSET": "demo",
        "MCP_TASKS_PIPELINES_DIR": os.path.join(root, "pipelines"),
        "PYTHONPATH": root,
        **(extra_env or {}),
    }
    async with split_stack(temporal, data_dir, env) as split:
        client = await Client.connect(temporal.address)
        pids = {
            "temporal": split.temporal_pid,
            "worker": split.worker.pid,
            "server": split.server.pid,
        }
        metrics = f"http://127.0.0.1:{MeteredTemporal.metrics_port}/metrics"
        url = f"http://127.0.0.1:{port}/mcp"
        yield Stack(url, client, metrics, pids, token, deploy_token)


async def counters(http: httpx.AsyncClient, url: str) -> Counter[str]:
    """`service_requests` by service and operation, and `persistence_requests` in all, summed
    over the other labels (a request to the frontend is counted again by the history or
    matching service it reaches: each is kept under its own service)."""
    totals: Counter[str] = Counter()
    for line in (await http.get(url)).text.splitlines():
        found = COUNTER.match(line)
        if not found:
            continue
        if found[1] == "persistence_requests":
            totals["persistence"] += int(float(found[3]))
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', found[2]))
        service = labels.get("service_name", "?")
        totals[f"{service}:{labels.get('operation', '?')}"] += int(float(found[3]))
    return totals


@dataclass
class Window:
    """Counters, CPU seconds and the clock before an action; `close` gives the deltas per unit,
    less what the same time costs with nothing happening (pollers' long-polls, the server's
    background refreshes), measured once by `idle`."""

    stack: Stack
    http: httpx.AsyncClient
    before: Counter[str]
    cpu: dict[str, float]
    began: float

    @classmethod
    async def open(cls, stack: Stack, http: httpx.AsyncClient) -> Window:
        await asyncio.sleep(2)  # let the previous action's stragglers land
        cpu = {name: cpu_seconds(pid) for name, pid in stack.pids.items()}
        before = await counters(http, stack.metrics)
        return cls(stack, http, before, cpu, time.monotonic())

    async def deltas(self) -> tuple[dict[str, float], dict[str, float], float]:
        await asyncio.sleep(2)
        after = await counters(self.http, self.stack.metrics)
        seconds = time.monotonic() - self.began
        counts = {k: float(after[k] - self.before[k]) for k in after}
        cpu = {name: cpu_seconds(pid) - self.cpu[name] for name, pid in self.stack.pids.items()}
        return counts, cpu, seconds

    async def close(self, units: int, idle: Idle) -> dict[str, Any]:
        counts, cpu, seconds = await self.deltas()

        def per_unit(total: float, idle_rate: float, scale: float = 1.0) -> float:
            return round(scale * max(0.0, total - idle_rate * seconds) / units, 2)

        frontend = {
            k.split(":", 1)[1]: per_unit(v, idle.counts.get(k, 0.0))
            for k, v in counts.items()
            if k.startswith("frontend:")
        }
        return {
            "frontend requests": {k: v for k, v in frontend.items() if v},
            "persistence requests": per_unit(
                counts.get("persistence", 0.0), idle.counts.get("persistence", 0.0)
            ),
            "cpu ms": {
                name: per_unit(used, idle.cpu[name], scale=1000.0) for name, used in cpu.items()
            },
        }


@dataclass
class Idle:
    """What each second costs with nothing happening."""

    counts: dict[str, float]
    cpu: dict[str, float]

    @classmethod
    async def measure(cls, stack: Stack, http: httpx.AsyncClient, seconds: float) -> Idle:
        window = await Window.open(stack, http)
        await asyncio.sleep(seconds)
        counts, cpu, elapsed = await window.deltas()
        return cls(
            {k: v / elapsed for k, v in counts.items()}, {k: v / elapsed for k, v in cpu.items()}
        )

    def report(self) -> dict[str, Any]:
        frontend = {
            k.split(":", 1)[1]: round(v, 2)
            for k, v in self.counts.items()
            if k.startswith("frontend:") and v
        }
        return {
            "frontend requests per s": frontend,
            "persistence requests per s": round(self.counts.get("persistence", 0.0), 2),
            "cpu ms per s": {k: round(1000 * v, 2) for k, v in self.cpu.items()},
        }


async def history_of(client: Client, workflow_id: str) -> dict[str, Any]:
    handle = client.get_workflow_handle(workflow_id)
    events = [event async for event in handle.fetch_history_events()]
    described = (await handle.describe()).raw_description.workflow_execution_info
    kinds = Counter(event.WhichOneof("attributes") for event in events)
    return {
        "events": len(events),
        "bytes": sum(e.ByteSize() for e in events),
        "memo bytes": described.memo.ByteSize(),
        "search attribute bytes": described.search_attributes.ByteSize(),
        "event kinds": dict(kinds.most_common()),
    }


async def create(client: LoadClient, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.rpc("tools/call", {"name": tool, "arguments": arguments}, tool)
    task_id: str = (result.get("task") or result)["taskId"]
    return task_id


async def status(client: LoadClient, task_id: str) -> dict[str, Any]:
    return await client.rpc("tasks/get", {"taskId": task_id}, task_id)


async def answer_with(
    client: LoadClient, task_id: str, key: str, answer: dict[str, Any] = APPROVE
) -> None:
    update = {"taskId": task_id, "inputResponses": {key: answer}}
    await client.rpc("tasks/update", update, task_id)


async def settle(seconds: float) -> None:
    """Wait without asking anything: a poll inside a window would count as the action's."""
    await asyncio.sleep(seconds)


async def measure(data_dir: Path, approvals: int, polls: int) -> dict[str, Any]:
    async with stack(data_dir) as running, httpx.AsyncClient(timeout=60) as http:
        client = LoadClient(running.url, running.token, Stats(), http)
        idle_rss = {name: round(rss_mib(pid), 1) for name, pid in running.pids.items()}
        idle = await Idle.measure(running, http, IDLE_S)

        window = await Window.open(running, http)
        ids = [
            await create(client, "request_approval", {"message": f"Approve change {i}?"})
            for i in range(approvals)
        ]
        await settle(10)
        park = await window.close(approvals, idle)
        states = [(await status(client, task_id))["status"] for task_id in ids]
        assert set(states) == {"input_required"}, Counter(states)
        parked_rss = {name: round(rss_mib(pid), 1) for name, pid in running.pids.items()}

        window = await Window.open(running, http)
        for i in range(polls):
            await status(client, ids[i % len(ids)])
        poll = await window.close(polls, idle)

        answered = ids[: max(1, approvals // 5)]
        window = await Window.open(running, http)
        for task_id in answered:
            key = next(iter((await status(client, task_id))["inputRequests"]))
            await answer_with(client, task_id, key)
        await settle(5)
        answer = await window.close(len(answered), idle)
        assert (await status(client, answered[0]))["status"] == "completed"

        # pipelines/example.toml: build (3 s), migrate (5 s), the approval, switch (2 s).
        client = LoadClient(running.url, running.deploy_token, Stats(), http)
        window = await Window.open(running, http)
        deploy_id = await create(client, "deploy", {"pipeline": "example"})
        await settle(20)
        key = next(iter((await status(client, deploy_id))["inputRequests"]))
        await answer_with(client, deploy_id, key, APPROVE_STEP)
        await settle(10)
        deploy = await window.close(1, idle)
        assert (await status(client, deploy_id))["status"] == "completed"
        return {
            "one parked approval": {"history": await history_of(running.client, ids[-1]), **park},
            "one approval answered (to its close; includes one tasks/get for its question)": {
                "history": await history_of(running.client, answered[0]),
                **answer,
            },
            "one tasks/get (poll) of a parked approval": poll,
            "one approved deploy of pipelines/example.toml, start to close (includes one "
            "tasks/get for its question)": {
                "history": await history_of(running.client, deploy_id),
                **deploy,
            },
            f"idle, over {IDLE_S:.0f} s (subtracted from the figures above)": idle.report(),
            "RSS MiB idle": idle_rss,
            f"RSS MiB with {approvals} parked": parked_rss,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--approvals", type=int, default=50)
    parser.add_argument("--polls", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="unit-costs-") as scratch:
        figures = asyncio.run(measure(Path(scratch), args.approvals, args.polls))
    json.dump(figures, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
