"""Temporal, `mcp-tasks server` and `mcp-tasks worker` as three separate processes on one host,
each of which a test can kill with SIGKILL (with everything it started, as a crashing machine
or container would lose them) and start again on the same ports and the same data.

- Temporal is the `temporal` CLI through the code `mcp-tasks dev` uses (runtime/devserver.py),
  on a SQLite file: a restart on the same file finds every workflow it had acknowledged.
- The server and the worker are the `mcp-tasks` entry point, configured by `MCP_TASKS_*`.
- Ready means: Temporal answers a health check; the server's /readyz says ready (Temporal,
  search attributes); a worker polls the task queue under its own pid (checked here: /readyz
  does not ask for workers).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import httpx
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from mcp_server.runtime.devserver import TemporalDevServer, free_port
from tests.dev_process import MCP_TASKS, alive, descendants, wait_gone
from tests.mcp_client import McpClient

Part = Literal["temporal", "server", "worker"]
PARTS: tuple[Part, ...] = ("server", "worker", "temporal")


def kill_tree(process: subprocess.Popen[bytes]) -> None:
    """kill -9 of `process` and of every process it started (whatever their process group)."""
    tree = [process.pid, *descendants(process.pid)]
    for pid in tree:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    process.wait()
    wait_gone(tree)


class McpTasksProcess:
    """`mcp-tasks server` or `mcp-tasks worker`, its output in a log file of its own."""

    def __init__(
        self,
        command: Literal["server", "worker"],
        log_dir: Path,
        env: dict[str, str],
        cwd: Path | None = None,
    ):
        self.command = command
        self.log_dir = log_dir
        self.env = env
        self.cwd = cwd  # None: this process's working directory
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        assert self.process is None, f"{self.command} already runs"
        self.starts += 1
        with (self.log_dir / f"{self.command}-{self.starts}.log").open("wb") as log:
            self.process = subprocess.Popen(
                [MCP_TASKS, self.command],
                cwd=self.cwd,
                env={**os.environ, **self.env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.command} is not running"
        return self.process.pid

    def kill(self) -> None:
        if self.process is not None:
            kill_tree(self.process)
        self.process = None

    def output(self) -> str:
        """What its latest start has printed so far (stdout and stderr)."""
        return (self.log_dir / f"{self.command}-{self.starts}.log").read_text(errors="replace")

    def exited(self) -> str | None:
        """Why the process is gone, with the end of its log; None while it runs."""
        if self.process is None or self.process.poll() is None:
            return None
        log = (self.log_dir / f"{self.command}-{self.starts}.log").read_text(errors="replace")
        return f"mcp-tasks {self.command} exited ({self.process.returncode}): {log[-2000:]}"


class Topology:
    """One Temporal, one server, one worker, on fixed ports and one data dir."""

    def __init__(self, directory: Path, **settings: str) -> None:
        self.directory = directory
        self.pipelines_dir = directory / "pipelines"
        self.pipelines_dir.mkdir(parents=True, exist_ok=True)
        self.temporal = TemporalDevServer(directory / "temporal", port=free_port())
        self.port = free_port()
        self.task_queue = "crash-matrix"
        env = {
            "MCP_TASKS_TEMPORAL_ADDRESS": self.temporal.address,
            "MCP_TASKS_TASK_QUEUE": self.task_queue,
            "MCP_TASKS_TOOLSET": "demo",
            "MCP_TASKS_PORT": str(self.port),
            "MCP_TASKS_STATE_SECRET": "s" * 32,
            "MCP_TASKS_PIPELINES_DIR": str(self.pipelines_dir),
            "MCP_TASKS_LOG_LEVEL": "WARNING",
            **{f"MCP_TASKS_{key.upper()}": value for key, value in settings.items()},
        }
        self.server = McpTasksProcess("server", directory, env)
        self.worker = McpTasksProcess("worker", directory, env)
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        self.temporal.start()
        await self.temporal.wait_ready()
        self.worker.start()
        self.server.start()
        await self.wait_ready()

    def stop(self) -> None:
        self.server.kill()
        self.worker.kill()
        self.kill("temporal")

    def kill(self, part: Part) -> None:
        """kill -9 of one part and everything it started."""
        if part == "temporal":
            if self.temporal.process is not None:
                kill_tree(self.temporal.process)
            self.temporal.process = None
        else:
            getattr(self, part).kill()

    async def start_part(self, part: Part) -> None:
        """Start a part again on the same port and data, and wait until it is ready."""
        if part == "temporal":
            self.temporal.start()  # the same --port and --db-filename
            await self.temporal.wait_ready()
        else:
            getattr(self, part).start()
        await self.wait_ready()

    async def wait_ready(self, within: float = 60) -> None:
        """Until the worker process polls the task queue and the server's /readyz is 200."""
        deadline = time.monotonic() + within
        client = await Client.connect(self.temporal.address)
        async with httpx.AsyncClient(timeout=5) as http:
            while time.monotonic() < deadline:
                for part in (self.server, self.worker):
                    assert part.exited() is None, part.exited()
                if await self._polls(client) and await self._ready(http):
                    return
                await asyncio.sleep(0.2)
        raise AssertionError(f"the topology in {self.directory} was not ready in {within} s")

    async def _polls(self, client: Client) -> bool:
        """Whether the current worker process (by pid) polls for workflow tasks."""
        try:
            response = await client.workflow_service.describe_task_queue(
                DescribeTaskQueueRequest(
                    namespace=client.namespace,
                    task_queue=TaskQueue(name=self.task_queue),
                    task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
                )
            )
        except Exception:  # Temporal still starting
            return False
        return any(p.identity.startswith(f"{self.worker.pid}@") for p in response.pollers)

    async def _ready(self, http: httpx.AsyncClient) -> bool:
        try:
            return (await http.get(f"http://127.0.0.1:{self.port}/readyz")).status_code == 200
        except httpx.TransportError:
            return False


@asynccontextmanager
async def running(directory: Path, **settings: str) -> AsyncIterator[tuple[Topology, McpClient]]:
    """A started topology and an MCP client of its server; every process killed at the end."""
    topology = Topology(directory, **settings)
    try:
        await topology.start()
        async with httpx.AsyncClient(timeout=30) as http:
            yield topology, McpClient(http, topology.url)
    finally:
        topology.stop()
