"""One `mcp-tasks dev` process tree as a benchmark target: the HTTP server and the worker on
one event loop, with its embedded Temporal as a child process. Used by `make load --topology
dev` (bench/load.py) and by `make bench` (bench/floor.py), which both also time the raw
Temporal client against the same child."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.run import spawn, wait_ready
from mcp_server.runtime.devserver import free_port

DEV = "mcp-tasks dev (HTTP server + worker)"
TEMPORAL = "temporal (dev server child)"


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@dataclass
class Dev:
    """A running `mcp-tasks dev`; `process.returncode` is read after the stack stopped it."""

    process: subprocess.Popen[bytes]
    port: int
    temporal_port: int
    temporal_pid: int | None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    def pids(self) -> dict[str, int]:
        named = {DEV: self.process.pid}
        if self.temporal_pid is not None:
            named[TEMPORAL] = self.temporal_pid
        return named


@asynccontextmanager
async def dev_stack(data_dir: Path, env: dict[str, str], *flags: str) -> AsyncIterator[Dev]:
    """`mcp-tasks dev FLAGS` on `data_dir/data` (log in `data_dir/dev.log`), on free ports,
    ready when its /readyz answers 200; stopped with SIGTERM (as Ctrl-C does) on exit."""
    port, temporal_port = free_port(), free_port()
    ports = ["--port", str(port), "--temporal-port", str(temporal_port)]
    dev = spawn(
        "dev", data_dir / "dev.log", env, *flags, *ports, "--data-dir", str(data_dir / "data")
    )
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            await wait_ready(http, f"http://127.0.0.1:{port}/readyz", [dev], data_dir)
        temporal = [
            pid
            for pid in children(dev.pid)
            if Path(f"/proc/{pid}/comm").read_text().strip() == "temporal"
        ]
        yield Dev(dev, port, temporal_port, temporal[0] if temporal else None)
    finally:
        dev.send_signal(signal.SIGTERM)
        dev.wait(60)
