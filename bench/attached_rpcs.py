"""How many Temporal RPCs the server makes while an attached call follows an idle task.

    python -m bench.attached_rpcs --seconds 10

Starts a Temporal dev server on a temporary data dir, a worker on a client of its own and the
HTTP app (toolset conformance) on another client, whose RPCs are counted by name. Then one
`tools/call` of `slow_compute` without the tasks extension (so it runs attached: the call
waits for its task), the task sleeping `--seconds` in a durable timer, changing nothing
meanwhile. Prints the RPCs the server's client made from the call's start to its answer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from temporalio.client import Client

from mcp_server.http.app import HttpServer, create_app
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.worker import build_worker
from mcp_server.temporal.setup import register_missing
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.settings import Settings

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def count_rpcs(client: Client) -> Counter[str]:
    """Count every RPC `client` makes from now on, by name."""
    counted: Counter[str] = Counter()
    service = client.service_client
    call = service._rpc_call

    async def counting(rpc: str, *args: Any, **kwargs: Any) -> Any:
        counted[rpc] += 1
        return await call(rpc, *args, **kwargs)

    service._rpc_call = counting  # type: ignore[method-assign]
    return counted


@contextlib.asynccontextmanager
async def serving(app: Any, port: int) -> AsyncIterator[None]:
    """`app` on uvicorn on 127.0.0.1:`port` for the block."""
    server = HttpServer(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with server.running():
        yield


async def bench(seconds: float) -> dict[str, Any]:
    temporal = TemporalDevServer(Path(tempfile.mkdtemp(prefix="mcp-tasks-rpcs-")), port=free_port())
    temporal.start()
    try:
        await temporal.wait_ready()
        worker_client = await Client.connect(temporal.address)
        await register_missing(worker_client)
        server_client = await Client.connect(temporal.address)
        settings = Settings(port=free_port(), state_secret="s" * 32)
        registry = load_toolsets("conformance", [], settings)
        app = create_app(settings, registry, client=server_client)
        async with serving(app, settings.port), build_worker(worker_client, settings, registry):
            url = f"http://127.0.0.1:{settings.port}/mcp"
            params = {"name": "slow_compute", "arguments": {"seconds": seconds}, "_meta": META}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            headers = {
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": "slow_compute",
                "Accept": "application/json, text/event-stream",
            }
            async with httpx.AsyncClient(timeout=seconds + 60) as http:
                counted = count_rpcs(server_client)
                started = time.perf_counter()
                response = await http.post(url, json=body, headers=headers)
                elapsed = time.perf_counter() - started
            assert response.status_code == 200, response.text
    finally:
        temporal.stop()
    return {"seconds": round(elapsed, 1), "rpcs": sum(counted.values()), "byName": dict(counted)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    print(json.dumps(asyncio.run(bench(parser.parse_args().seconds)), indent=2))


if __name__ == "__main__":
    main()
