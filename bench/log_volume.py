"""How much the server and the worker log per approval, and per poll, for the capacity plan
(docs/operations/capacity.md): `python -m bench.log_volume`.

`mcp-tasks worker` and `mcp-tasks server` as two processes on a Temporal dev server, with the
defaults of a deployment: JSON logs at INFO. Each approval is one `request_approval` created,
polled with `tasks/get` until it asks (`input_required`), answered with `tasks/update`, and
polled until it completed, as a client does. Then `--polls` more `tasks/get` of one parked
task alone. The log files are measured around each phase: lines and bytes. Run again with
`MCP_TASKS_LOG_READS_EVERY=10` in the environment to measure sampled reads.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import httpx

from bench.load_clients import LoadClient, Stats
from bench.run import split_stack
from mcp_server.runtime.devserver import TemporalDevServer, free_port

APPROVE = {"action": "accept", "content": {"decision": "approve"}}


def size(path: Path) -> tuple[int, int]:
    """(lines, bytes) of a log file."""
    data = path.read_bytes() if path.exists() else b""
    return data.count(b"\n"), len(data)


async def until(client: LoadClient, task_id: str, status: str) -> int:
    """tasks/get until the task has `status`; how many gets it took."""
    gets = 0
    while True:
        gets += 1
        task = await client.rpc("tasks/get", {"taskId": task_id}, task_id)
        if task["status"] == status:
            return gets
        await asyncio.sleep(0.2)


async def measure(approvals: int, polls: int) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="mcp-tasks-logs-"))
    (data_dir / "temporal").mkdir()
    temporal = TemporalDevServer(data_dir / "temporal", port=free_port())
    temporal.start()
    port = free_port()
    env = {
        **os.environ,
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_PORT": str(port),
        "MCP_TASKS_TOOLSET": "demo",
        "MCP_TASKS_LOG_FORMAT": "json",
        "MCP_TASKS_LOG_LEVEL": "INFO",
    }
    server_log, worker_log = data_dir / "server.log", data_dir / "worker.log"
    async with split_stack(temporal, data_dir, env), httpx.AsyncClient(timeout=60) as http:
        client = LoadClient(f"http://127.0.0.1:{port}/mcp", None, Stats(), http)
        server0, worker0 = size(server_log), size(worker_log)
        gets = 0
        for n in range(approvals):
            call = {"name": "request_approval", "arguments": {"message": f"Ship {n}?"}}
            result = await client.rpc("tools/call", call, "request_approval")
            task_id = (result.get("task") or result)["taskId"]
            gets += await until(client, task_id, "input_required")
            update = {"taskId": task_id, "inputResponses": {"decision": APPROVE}}
            await client.rpc("tasks/update", update, task_id)
            gets += await until(client, task_id, "completed")
        server1, worker1 = size(server_log), size(worker_log)
        call = {"name": "request_approval", "arguments": {"message": "Parked"}}
        parked = await client.rpc("tools/call", call, "request_approval")
        parked_id = (parked.get("task") or parked)["taskId"]
        await until(client, parked_id, "input_required")
        server2 = size(server_log)
        for _ in range(polls):
            await client.rpc("tasks/get", {"taskId": parked_id}, parked_id)
        server3 = size(server_log)
        written = server_log.read_bytes()[server2[1] : server3[1]].splitlines()
    approval_lines, approval_bytes = server1[0] - server0[0], server1[1] - server0[1]
    kinds: dict[str, list[int]] = {}
    for line in written:
        entry = json.loads(line)
        kind = f"{entry.get('method', entry.get('logger'))} {entry.get('outcome', '')}".strip()
        kinds.setdefault(kind, []).append(len(line) + 1)
    return {
        "approvals": approvals,
        "tasks/get per approval (polling every 0.2 s)": round(gets / approvals, 1),
        "server lines per approval": round(approval_lines / approvals, 1),
        "server bytes per approval": round(approval_bytes / approvals),
        "worker lines per approval": round((worker1[0] - worker0[0]) / approvals, 2),
        "worker bytes per approval": round((worker1[1] - worker0[1]) / approvals),
        "polls": polls,
        "server lines while polling, by method and outcome (count, mean bytes)": {
            kind: (len(sizes), round(sum(sizes) / len(sizes))) for kind, sizes in kinds.items()
        },
        "MCP_TASKS_LOG_READS_EVERY": os.environ.get("MCP_TASKS_LOG_READS_EVERY", "1"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approvals", type=int, default=20)
    parser.add_argument("--polls", type=int, default=200)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.approvals, args.polls)), indent=2))


if __name__ == "__main__":
    main()
