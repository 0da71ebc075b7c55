"""`make load` on the split topology: a Temporal dev server, one `mcp-tasks server` and one
`mcp-tasks worker`, each its own process (as bench/run.py starts them for `make bench`, and as
production runs them), with `--auth tokens` and one token per client. The peak RSS of each of
the three processes is sampled from /proc while the load runs."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import httpx

from bench.load import run_load, sample_peaks
from bench.run import spawn, wait_ready
from mcp_server.runtime.config import Settings
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.tokens import add_token


async def on_split(
    tasks: int, clients: int, data_dir: Path | None = None, **load: Any
) -> dict[str, Any]:
    """Start Temporal, `mcp-tasks worker` and `mcp-tasks server --auth tokens` on `data_dir`
    (default a new temporary one), run the load, stop the two with SIGTERM, then Temporal."""
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="mcp-tasks-load-"))
    tokens_file = data_dir / "tokens.json"
    tokens: list[str | None] = [
        add_token(tokens_file, f"load-client-{i}", []) for i in range(clients)
    ]
    synchronous = Settings.from_env().sqlite_synchronous
    (data_dir / "temporal").mkdir(exist_ok=True)
    temporal = TemporalDevServer(data_dir / "temporal", port=free_port(), synchronous=synchronous)
    temporal.start()
    port = free_port()
    env = {
        **os.environ,
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_TOOLSET": "demo",
        "MCP_TASKS_PORT": str(port),
        "MCP_TASKS_AUTH": "tokens",
        "MCP_TASKS_TOKENS_FILE": str(tokens_file),
    }
    parts: list[subprocess.Popen[bytes]] = []
    peaks: dict[str, float] = {}
    try:
        await temporal.wait_ready()
        assert temporal.process is not None
        parts = [
            spawn("worker", data_dir / "worker.log", env),
            spawn("server", data_dir / "server.log", env),
        ]
        async with httpx.AsyncClient(timeout=10) as http:
            await wait_ready(http, f"http://127.0.0.1:{port}/readyz", parts, data_dir)
        pids = {
            "mcp-tasks server": parts[1].pid,
            "mcp-tasks worker": parts[0].pid,
            "temporal (dev server)": temporal.process.pid,
        }
        sampling = asyncio.create_task(sample_peaks(pids, peaks))
        results = await run_load(f"http://127.0.0.1:{port}/mcp", tokens, tasks, **load)
        sampling.cancel()
    finally:
        for part in parts:
            part.send_signal(signal.SIGTERM)
        for part in parts:
            part.wait(60)
        temporal.stop()
    results["topology"] = "split"
    results["peak_rss_mib"] = peaks
    results["exit_codes"] = {"server": parts[1].returncode, "worker": parts[0].returncode}
    results["data_dir"] = str(data_dir)
    return results
