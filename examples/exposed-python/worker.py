"""The team's worker: MigrateDatabase on task queue `exposed-python`, against the Temporal of
MCP_TASKS_TEMPORAL_ADDRESS (default 127.0.0.1:7233), namespace MCP_TASKS_NAMESPACE (default
`default`). Knows nothing of the MCP server but the helper."""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client
from temporalio.worker import Worker

from activities import copy_rows, drop_copy, switch_traffic
from workflows import MigrateDatabase

TASK_QUEUE = "exposed-python"


async def connect(address: str, namespace: str, within_s: float = 60) -> Client:
    """The client, once Temporal answers: started beside `mcp-tasks dev`, the worker may be up
    before the dev server is."""
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        try:
            return await Client.connect(address, namespace=namespace)
        except RuntimeError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(1)


async def main() -> None:
    address = os.environ.get("MCP_TASKS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
    namespace = os.environ.get("MCP_TASKS_NAMESPACE", "default")
    client = await connect(address, namespace)
    worker = Worker(
        client,
        task_queue=TASK_QUEUE,
        workflows=[MigrateDatabase],
        activities=[copy_rows, switch_traffic, drop_copy],
    )
    print(
        f"worker: MigrateDatabase on task queue {TASK_QUEUE} at {address}/{namespace}", flush=True
    )
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
