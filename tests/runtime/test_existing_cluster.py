"""Joining a Temporal that already runs, as docs/operations/existing-cluster.md walks it: a
fresh namespace with nothing registered, `mcp-tasks server` refusing to start there, `mcp-tasks
setup` registering what is needed (and changing nothing the second time), then the worker and
the server as processes of their own, and a `deploy` approved with `mcp-tasks tasks answer`.

Real processes, because what is tested is what each command does at start and what it prints;
a real Temporal dev server (started here on 127.0.0.1, as the page's local path starts one),
because setup's changes are the cluster's own search attributes. Every command run here is on
the page as written (the test checks it), with this test's ports for 7233 and 8000; and the
page's local block itself runs as one bash script.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_TYPES, SEARCH_ATTRIBUTES
from tests.crash_topology import McpTasksProcess
from tests.dev_process import MCP_TASKS
from tests.mcp_client import McpClient

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "operations" / "existing-cluster.md"
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
NAMESPACE = "mcp-tasks"
CREATE = (
    "temporal operator namespace create --namespace mcp-tasks --retention 721h "
    "--address 127.0.0.1:7233"
)
SETUP = "mcp-tasks setup"
SERVER = "mcp-tasks server"
WORKER = "mcp-tasks worker"
ANSWER = "mcp-tasks tasks answer $T --set approve=true"
# The venv's commands (mcp-tasks, temporal), as the page puts them on PATH.
VENV_BIN = str(Path(MCP_TASKS).parent)
# What the page exports for a worker that runs outside the clone.
DIRECTORIES = 'export MCP_TASKS_PIPELINES_DIR="$REPO/pipelines" MCP_TASKS_IMPORT_DIR="$PWD/imports"'


def page_block() -> str:
    """The page's local walkthrough: the bash block after `<!-- local-dev-server -->`."""
    match = re.search(r"<!-- local-dev-server -->\n```bash\n(.*?)```", PAGE.read_text(), re.S)
    assert match, "the page has no local-dev-server block"
    return match.group(1)


def test_every_command_this_test_runs_is_on_the_page_as_written() -> None:
    lines = [line.split("  #")[0].rstrip(" &") for line in page_block().splitlines()]
    for command in (CREATE, SETUP, SERVER, WORKER, ANSWER, DIRECTORIES):
        assert command in lines, command


def outside(tmp_path: Path) -> Path:
    """A folder of the user's own, outside the repository, with an imports directory (as the
    page makes one)."""
    folder = tmp_path / "trial"
    (folder / "imports").mkdir(parents=True)
    assert not folder.is_relative_to(ROOT)
    return folder


def run(
    command: str, env: dict[str, str], address: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """One of the page's commands, from `cwd`, with the venv on PATH as the page puts it,
    127.0.0.1:7233 being `address`."""
    argv = shlex.split(command.replace("127.0.0.1:7233", address))
    path = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **env, "PATH": path},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[TemporalDevServer]:
    """A Temporal that already runs, with a namespace nobody has set up yet."""
    temporal = TemporalDevServer(tmp_path / "temporal", port=free_port())
    temporal.start()
    try:
        yield temporal
    finally:
        temporal.stop()


async def test_setup_then_a_worker_and_a_server_join_a_fresh_namespace_and_a_deploy_is_approved(
    cluster: TemporalDevServer, tmp_path: Path
) -> None:
    await cluster.wait_ready()
    port = free_port()
    here = outside(tmp_path)
    env = {
        "MCP_TASKS_PIPELINES_DIR": str(ROOT / "pipelines"),
        "MCP_TASKS_IMPORT_DIR": str(here / "imports"),
        "MCP_TASKS_TEMPORAL_ADDRESS": cluster.address,
        "MCP_TASKS_NAMESPACE": NAMESPACE,
        "MCP_TASKS_STATE_SECRET": "s" * 64,
        "MCP_TASKS_PORT": str(port),
        "MCP_TASKS_TASK_QUEUE": "existing-cluster",
        "MCP_TASKS_LOG_LEVEL": "WARNING",
    }
    created = run(CREATE, env, cluster.address, here)
    assert created.returncode == 0, created.stderr

    refused = run(SERVER, env, cluster.address, here)
    assert refused.returncode == 6, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert "run `mcp-tasks setup`" in line and "McpStatus" in line and "Traceback" not in line

    first = run(SETUP, env, cluster.address, here)
    assert first.returncode == 0, first.stderr
    registered = [
        f"registered search attribute {n} ({SEARCH_ATTRIBUTE_TYPES[n]})" for n in SEARCH_ATTRIBUTES
    ]
    assert first.stdout.splitlines()[-len(registered) :] == registered, first.stdout
    assert "retention 721h (721h needed" in first.stdout and "warning" not in first.stdout
    again = run(SETUP, env, cluster.address, here)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "nothing to change", again.stdout

    worker = McpTasksProcess("worker", tmp_path, env, cwd=here)
    server = McpTasksProcess("server", tmp_path, env, cwd=here)
    worker.start()
    server.start()
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            await ready(http, port, [worker, server])
            mcp = McpClient(http, f"http://127.0.0.1:{port}/mcp")
            task_id = await mcp.create_task("deploy", {"pipeline": "release"})
            waiting = await mcp.wait_status(task_id, "input_required", within=40)
            assert list(waiting["inputRequests"]) == ["approve-switch-traffic"]
            answered = run(ANSWER.replace("$T", task_id), env, cluster.address, here)
            assert answered.returncode == 0, answered.stderr
            done = await mcp.wait_terminal(task_id, within=30)
        assert done["status"] == "completed", done
        assert worker.exited() is None and server.exited() is None
        said = {part.command: part.output() for part in (worker, server)}
        assert "mcp-tasks worker: up, polling; toolset demo" in said["worker"]
        assert f"mcp-tasks server: up on http://127.0.0.1:{port}/mcp" in said["server"]
        assert "MCP_TASKS_PIPELINES_DIR names" not in said["worker"]  # it was set
    finally:
        server.kill()
        worker.kill()


async def ready(http: httpx.AsyncClient, port: int, parts: list[McpTasksProcess]) -> None:
    """Until the server's /readyz says ready (Temporal, search attributes); bounded."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for part in parts:
            assert part.exited() is None, part.exited()
        try:
            if (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.2)
    raise AssertionError("the server was not ready within 30 s")


def test_the_pages_local_walkthrough_runs_as_written(tmp_path: Path) -> None:
    """The page's block as one bash script, with the `mcp` function of Getting started, on
    this test's ports: it starts its own dev server, worker and server (all killed after)."""
    mcp_function = re.search(r"(mcp\(\) \{.*?echo; \})", GETTING_STARTED.read_text(), re.S)
    assert mcp_function, "Getting started has no mcp function"
    temporal_port, port = free_port(), free_port()
    script = f"{mcp_function.group(1)}\n{page_block()}".replace("7233", str(temporal_port))
    script = script.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    # The page's clone and scratch folder: this repository, and a folder outside it.
    trial = tmp_path / "mcp-trial"
    assert script.count("REPO=~/src/mcp-tasks-temporal") == 1 and "~/mcp-trial" in script
    script = script.replace("REPO=~/src/mcp-tasks-temporal", f"REPO={shlex.quote(str(ROOT))}")
    script = script.replace("~/mcp-trial", shlex.quote(str(trial)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_TASKS_")}
    env |= {"MCP_TASKS_PORT": str(port), "MCP_TASKS_LOG_LEVEL": "WARNING"}
    output = tmp_path / "walkthrough.log"
    with output.open("wb") as log:
        walk = subprocess.Popen(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        code = walk.wait(timeout=90)
    finally:
        with contextlib.suppress(ProcessLookupError):  # its background Temporal, worker, server
            os.killpg(walk.pid, signal.SIGKILL)
    said = output.read_text(errors="replace")
    assert code == 0, said[-3000:]
    assert "lacks the search attributes" in said and "run `mcp-tasks setup`" in said
    assert said.count("registered search attribute ") == len(SEARCH_ATTRIBUTES)
    assert "nothing to change" in said and "answered 'approve-switch-traffic'" in said
    assert "mcp-tasks worker: up" in said and "mcp-tasks server: up on" in said
    assert not (ROOT / "mcp-trial").exists() and (trial / "imports").is_dir()
    assert said.rstrip().splitlines()[-1].count('"status":"completed"') == 1, said[-3000:]
