"""Replicas as an operator runs them: `mcp-tasks server` and `mcp-tasks worker` processes, each
its own process group (so `kill -9` takes it and all it started), on one Temporal."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.run import spawn, wait_ready
from mcp_server.runtime.devserver import free_port
from tests.dev_process import alive


@dataclass
class Replicas:
    """Servers and workers sharing one Temporal address, task queue and state secret."""

    temporal_address: str
    logs: Path
    settings: dict[str, str] = field(default_factory=dict)
    task_queue: str = field(default_factory=lambda: f"replicas-{uuid.uuid4()}")
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "MCP_TASKS_TEMPORAL_ADDRESS": self.temporal_address,
            "MCP_TASKS_TASK_QUEUE": self.task_queue,
            "MCP_TASKS_TOOLSET": "demo",
            "MCP_TASKS_STATE_SECRET": "replica-secret-" + "s" * 32,
            **{f"MCP_TASKS_{k.upper()}": v for k, v in {**self.settings, **extra}.items()},
        }

    def start(self, command: str, **extra: str) -> subprocess.Popen[bytes]:
        name = f"{command}-{len(self.processes)}.log"
        process = spawn(command, self.logs / name, self.env(**extra))
        self.processes.append(process)
        return process

    def server(self) -> tuple[subprocess.Popen[bytes], int]:
        port = free_port()
        return self.start("server", port=str(port)), port

    async def ready(self, http: httpx.AsyncClient, port: int) -> None:
        """Until the server on `port` answers /readyz (Temporal reachable; a worker may still be
        starting: tasks wait in Temporal for it)."""
        await wait_ready(http, f"http://127.0.0.1:{port}/readyz", self.processes, self.logs)

    def stop_all(self) -> None:
        for process in self.processes:
            kill(process)


def kill(process: subprocess.Popen[bytes]) -> None:
    """kill -9 of the process and everything it started, as a crashing machine would."""
    if alive(process.pid):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@contextmanager
def replicas(temporal_address: str, logs: Path, **settings: str) -> Iterator[Replicas]:
    running = Replicas(temporal_address, logs, settings)
    try:
        yield running
    finally:
        running.stop_all()
