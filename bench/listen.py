"""How soon a subscriptions/listen stream hears a change, measured from outside over HTTP.

    python -m bench.listen --rounds 40

Starts a Temporal dev server on a temporary data dir, `mcp-tasks worker` and `mcp-tasks
server` (toolset demo) as separate processes. Each round creates a `request_approval` task,
opens a listen stream on it and, once the stream shows the task's question, answers it with
tasks/update: the latency is from sending tasks/update to the first `notifications/tasks` that
no longer shows the question (the answer, then the approval's end, are history events).
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

import httpx

from bench.run import META, Client, percentiles, split_stack
from mcp_server.runtime.devserver import TemporalDevServer, free_port


async def one_round(client: Client, index: int) -> float:
    params = {"name": "request_approval", "arguments": {"message": f"Round {index}?"}}
    task_id = (await client.rpc("tools/call", params, "request_approval"))["taskId"]
    body = {
        "jsonrpc": "2.0",
        "id": "listen",
        "method": "subscriptions/listen",
        "params": {"notifications": {"taskIds": [task_id]}, "_meta": META},
    }
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}
    answered_at = 0.0
    async with client.http.stream("POST", client.url, json=body, headers=headers) as stream:
        async for line in stream.aiter_lines():
            if not line.startswith("data: "):
                continue
            message = json.loads(line[len("data: ") :])
            if message.get("method") != "notifications/tasks":
                continue
            if message["params"]["status"] == "input_required" and not answered_at:
                answered_at = time.perf_counter()
                answer = {"decision": {"action": "accept", "content": {"decision": "approve"}}}
                update = {"taskId": task_id, "inputResponses": answer}
                await client.rpc("tasks/update", update, task_id)
            elif answered_at and message["params"]["status"] != "input_required":
                return time.perf_counter() - answered_at
    raise RuntimeError(f"the stream of {task_id} ended before the change arrived")


async def bench(rounds: int) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="mcp-tasks-bench-listen-"))
    temporal = TemporalDevServer(data_dir, port=free_port())
    temporal.start()
    port = free_port()
    env = {
        **os.environ,
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_TOOLSET": "demo",
        "MCP_TASKS_PORT": str(port),
    }
    async with split_stack(temporal, data_dir, env):
        async with httpx.AsyncClient(timeout=30) as http:
            client = Client(http, f"http://127.0.0.1:{port}/mcp")
            samples = [await one_round(client, index) for index in range(rounds)]
    return {
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "update_to_notification": percentiles(samples),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=40)
    options = parser.parse_args()
    print(json.dumps(asyncio.run(bench(options.rounds)), indent=2))


if __name__ == "__main__":
    main()
