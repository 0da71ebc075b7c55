"""The stack `make bench` measures, with one bearer token (one principal) per benchmark client.

Tools: the `conformance` toolset (as the issue's figures were taken: `slow_compute` gives the
cancelled tasks), the `demo` module (`request_approval` gives the parked ones) and
bench/fixture_tools.py (`bench_short_job`, the 50 ms task), loaded together through
MCP_TASKS_TOOL_MODULES; every other setting is the default (the open-task quota on, 1,000 per
principal).

- `dev` (default): one `mcp-tasks dev`, HTTP server and worker in one process, its Temporal
  a child process (bench/dev_stack.py).
- `split`: a Temporal dev server, `mcp-tasks server` and `mcp-tasks worker` as three processes
  (bench/run.py's split_stack), as production runs them.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.dev_stack import DEV, dev_stack
from bench.run import split_stack
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.tokens import add_token
from mcp_tasks.settings import Settings

TOPOLOGIES = ("dev", "split")
MODULES = ["mcp_server.tools.demo", "bench.fixture_tools"]
# The question phase's team workflow is an exposed tool (bench/question_tools.toml).
QUESTION_TOOLS = str(Path(__file__).with_name("question_tools.toml"))
TOOLS_ENV = {
    "MCP_TASKS_TOOLSET": "conformance",
    "MCP_TASKS_TOOL_MODULES": ",".join(MODULES),
    "MCP_TASKS_EXPOSED_WORKFLOWS_FILE": QUESTION_TOOLS,
}
ROOT = str(Path(__file__).resolve().parents[1])  # where `bench` imports from
SERVER, WORKER, TEMPORAL = "mcp-tasks server", "mcp-tasks worker", "temporal (dev server)"


@dataclass
class Stack:
    topology: str
    url: str
    temporal_address: str
    pids: dict[str, int]  # a name for each process measured
    tokens: list[str]
    exit_codes: dict[str, int | None] = field(default_factory=dict)  # set once stopped

    @property
    def worker(self) -> str:
        """The process that runs the task workflows (in `dev` also the HTTP server)."""
        return DEV if self.topology == "dev" else WORKER

    @property
    def temporal(self) -> str:
        return next(name for name in self.pids if name.startswith("temporal"))


@asynccontextmanager
async def floor_stack(topology: str, data_dir: Path, principals: int) -> AsyncIterator[Stack]:
    """Start the stack on `data_dir` with `principals` tokens; stop it on exit."""
    tokens_file = data_dir / "tokens.json"
    tokens = [add_token(tokens_file, f"bench-client-{i}", []) for i in range(principals)]
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    env = {
        **os.environ,
        **TOOLS_ENV,
        "PYTHONPATH": path,
        "MCP_TASKS_AUTH": "tokens",
        "MCP_TASKS_TOKENS_FILE": str(tokens_file),
    }
    if topology == "dev":
        async with dev_stack(data_dir, env) as dev:
            stack = Stack("dev", dev.url, dev.temporal_address, dev.pids(), tokens)
            yield stack
        stack.exit_codes = {DEV: dev.process.returncode}
        return
    synchronous = Settings.from_env().sqlite_synchronous
    (data_dir / "temporal").mkdir(exist_ok=True)
    temporal = TemporalDevServer(data_dir / "temporal", port=free_port(), synchronous=synchronous)
    temporal.start()
    port = free_port()
    env |= {"MCP_TASKS_TEMPORAL_ADDRESS": temporal.address, "MCP_TASKS_PORT": str(port)}
    async with split_stack(temporal, data_dir, env) as split:
        pids = {SERVER: split.server.pid, WORKER: split.worker.pid, TEMPORAL: split.temporal_pid}
        stack = Stack("split", f"http://127.0.0.1:{port}/mcp", temporal.address, pids, tokens)
        yield stack
    stack.exit_codes = {SERVER: split.server.returncode, WORKER: split.worker.returncode}
