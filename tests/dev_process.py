"""Running `mcp-tasks dev` as a user does: a whole process tree on its own data dir."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx

from tests.mcp_client import McpClient

# Idle connections leave the pool after 2 s, before the server's keep-alive (5 s) closes them:
# a pool that reuses a connection the server is closing at that moment gets a ReadError.
POOL = httpx.Limits(keepalive_expiry=2.0)

MCP_TASKS = str(Path(sys.executable).parent / "mcp-tasks")


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> bytes:
    """The command line of `pid`, its arguments separated by NUL ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pids: list[int], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, f"still running: {[p for p in pids if alive(p)]}"
        time.sleep(0.05)


class DevProcess:
    def __init__(
        self,
        data_dir: Path,
        port: int,
        temporal_port: int,
        env: dict[str, str] | None = None,
        toolset: str = "conformance",
        extra_args: tuple[str, ...] = (),
        cwd: Path | None = None,
    ) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.log_path = data_dir.parent / f"dev-{time.monotonic_ns()}.log"
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                MCP_TASKS,
                "dev",
                "--toolset",
                toolset,
                "--port",
                str(port),
                "--data-dir",
                str(data_dir),
                "--temporal-port",
                str(temporal_port),
                *extra_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=cwd,
            env=None if env is None else {**os.environ, **env},
        )
        log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def temporal_pid(self) -> int:
        """The pid of the Temporal dev server this `mcp-tasks dev` started (its child)."""
        (pid,) = [
            child for child in descendants(self.process.pid) if b"start-dev" in cmdline(child)
        ]
        return pid

    async def wait_healthy(self, http: httpx.AsyncClient, within: float = 60) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"mcp-tasks dev exited:\n{self.log()[-3000:]}"
            try:
                if (await http.get(f"http://127.0.0.1:{self.port}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
        raise AssertionError("mcp-tasks dev did not become healthy")

    def tree(self) -> list[int]:
        return [self.process.pid, *descendants(self.process.pid)]


@contextmanager
def reaped(processes: list[DevProcess]) -> Iterator[None]:
    try:
        yield
    finally:
        for dev in processes:
            for pid in dev.tree():
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
            dev.process.wait()


@asynccontextmanager
async def client_for(port: int) -> AsyncIterator[McpClient]:
    async with httpx.AsyncClient(timeout=15, limits=POOL) as http:
        yield McpClient(http, f"http://127.0.0.1:{port}/mcp")


class WorkerProcess:
    """`mcp-tasks worker` as its own process (the demo toolset), to be killed with SIGKILL."""

    def __init__(self, temporal_address: str, task_queue: str, **settings: str) -> None:
        env = {
            **os.environ,
            "MCP_TASKS_TEMPORAL_ADDRESS": temporal_address,
            "MCP_TASKS_TASK_QUEUE": task_queue,
            "MCP_TASKS_TOOLSET": "demo",
            **{f"MCP_TASKS_{key.upper()}": value for key, value in settings.items()},
        }
        self.process = subprocess.Popen(
            [MCP_TASKS, "worker"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def kill(self) -> None:
        """kill -9 of the worker and all it started, as a crashing machine would."""
        if alive(self.process.pid):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
