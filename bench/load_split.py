"""`make load` on the split topology: a Temporal dev server, one `mcp-tasks server` and one
`mcp-tasks worker`, each its own process (as bench/run.py starts them for `make bench`, and as
production runs them), with `--auth tokens` and one token per client. The peak RSS of each of
the three processes is sampled from /proc while the load runs."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from bench.load_clients import run_load, sample_peaks
from bench.run import split_stack
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.tokens import add_token
from mcp_tasks.settings import Settings


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
    peaks: dict[str, float] = {}
    async with split_stack(temporal, data_dir, env) as split:
        named = {
            "mcp-tasks server": split.server.pid,
            "mcp-tasks worker": split.worker.pid,
            "temporal (dev server)": split.temporal_pid,
        }
        sampling = asyncio.create_task(sample_peaks(named, peaks))
        results = await run_load(f"http://127.0.0.1:{port}/mcp", tokens, tasks, **load)
        sampling.cancel()
    results["topology"] = "split"
    results["peak_rss_mib"] = peaks
    results["exit_codes"] = {"server": split.server.returncode, "worker": split.worker.returncode}
    results["data_dir"] = str(data_dir)
    return results
