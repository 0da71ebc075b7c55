"""`mcp-tasks setup` (runtime/setup_command.py, temporal/setup.py), in process against the
session's Temporal dev server: a namespace of its own with a short retention, the warning
that names the fix, each registration said, and nothing the second time. What a cluster
refuses (permission) and an unreachable one are one line with their exit code."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
import uuid
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.setup_command import run_setup
from mcp_server.runtime.worker import missing_directories
from mcp_server.temporal.setup import (
    EXIT_DENIED,
    EXIT_NO_NAMESPACE,
    EXIT_NOT_SET_UP,
    EXIT_UNREACHABLE,
    ClusterProblem,
    missing_search_attributes,
    register_missing,
    require_ready,
)
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTES
from mcp_tasks.settings import Settings
from tests.dev_process import MCP_TASKS


async def a_namespace(client: Client, retention_hours: int) -> str:
    """A new namespace on the session's dev server. A loaded dev server may cancel the
    registration ("operation was canceled") after it took effect, or before: asked again, it
    says the namespace exists, or registers it."""
    name = f"setup-{uuid.uuid4().hex[:8]}"
    request = RegisterNamespaceRequest(
        namespace=name,
        workflow_execution_retention_period=Duration(seconds=retention_hours * 3600),
    )
    for attempt in range(3):
        try:
            await client.workflow_service.register_namespace(request, timeout=timedelta(seconds=30))
            return name
        except RPCError as err:
            if err.status == RPCStatusCode.ALREADY_EXISTS and attempt > 0:
                return name
            if err.status not in (RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED):
                raise
    raise AssertionError(f"the dev server did not register {name}")


async def test_setup_warns_of_a_short_retention_registers_each_attribute_then_changes_nothing(
    temporal: TemporalDevServer, temporal_client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = await a_namespace(temporal_client, retention_hours=24)
    settings = Settings(temporal_address=temporal.address, namespace=namespace, toolset="demo")
    assert await run_setup(settings) == 0
    said = capsys.readouterr().out.splitlines()
    assert (
        said[1] == f"namespace {namespace}: retention 24h (721h needed by the longest tool "
        "TTL plus its grace)"
    )
    assert said[2].startswith("warning: ") and (
        f"temporal operator namespace update --retention 721h --namespace {namespace}" in said[2]
    )
    assert said[3:] == [
        "registered search attribute McpStatus (Keyword)",
        "registered search attribute McpTool (Keyword)",
        "registered search attribute McpOwner (Keyword)",
        "registered search attribute McpApprovers (KeywordList)",
        "registered search attribute McpWaitingSince (Datetime)",
    ]
    assert await run_setup(settings) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "nothing to change"
    client = await Client.connect(temporal.address, namespace=namespace)
    await require_ready(client, None)  # what the server and worker check at start


async def test_a_fresh_namespace_is_refused_at_start_and_a_missing_one_is_named(
    temporal: TemporalDevServer, temporal_client: Client
) -> None:
    fresh = await Client.connect(
        temporal.address, namespace=await a_namespace(temporal_client, retention_hours=24)
    )
    with pytest.raises(ClusterProblem) as refused:
        await require_ready(fresh, None)
    assert refused.value.exit_code == EXIT_NOT_SET_UP
    assert "run `mcp-tasks setup`" in str(refused.value)
    missing = await Client.connect(temporal.address, namespace="no-such-namespace")
    with pytest.raises(ClusterProblem) as absent:
        await require_ready(missing, None)
    assert absent.value.exit_code == EXIT_NO_NAMESPACE
    assert "namespace 'no-such-namespace' does not exist" in str(absent.value)


def denying_client() -> Any:
    """A client whose cluster lists no attribute and refuses to add any, as an authorizer
    refuses a caller without the namespace's admin role."""

    async def listed(request: Any) -> Any:
        return SimpleNamespace(custom_attributes={})

    async def refused(request: Any) -> Any:
        raise RPCError("Request unauthorized.", RPCStatusCode.PERMISSION_DENIED, b"")

    operator = SimpleNamespace(list_search_attributes=listed, add_search_attributes=refused)
    return SimpleNamespace(namespace="mcp-prod", operator_service=operator)


async def test_a_missing_permission_names_the_commands_an_admin_runs() -> None:
    with pytest.raises(ClusterProblem) as denied:
        await register_missing(denying_client())
    assert denied.value.exit_code == EXIT_DENIED
    message = str(denied.value)
    assert "\n" not in message and "permission denied" in message
    for name in SEARCH_ATTRIBUTES:
        assert f"temporal operator search-attribute create --namespace mcp-prod --name {name}" in (
            message
        )


async def test_credentials_that_may_not_list_the_attributes_still_start_with_a_warning(
    temporal: TemporalDevServer, caplog: pytest.LogCaptureFixture
) -> None:
    client = await Client.connect(temporal.address)  # the session's namespace, set up

    async def refused(request: Any) -> Any:
        raise RPCError("Request unauthorized.", RPCStatusCode.PERMISSION_DENIED, b"")

    operator = SimpleNamespace(list_search_attributes=refused)
    checked = SimpleNamespace(
        namespace=client.namespace,
        operator_service=operator,
        workflow_service=client.workflow_service,
    )
    await require_ready(cast(Client, checked), None)
    assert "could not check the search attributes" in caplog.text


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MCP_TASKS_")}


def test_an_unreachable_cluster_is_one_line_and_exit_3() -> None:
    address = f"127.0.0.1:{free_port()}"
    done = subprocess.run(
        [MCP_TASKS, "setup"],
        env={**clean_env(), "MCP_TASKS_TEMPORAL_ADDRESS": address},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == EXIT_UNREACHABLE, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line == f"mcp-tasks setup: cannot reach Temporal at {address}: Connection refused"


async def test_the_missing_namespace_hint_creates_it_with_the_retention_setup_asks_for(
    temporal: TemporalDevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = f"absent-{uuid.uuid4().hex[:8]}"
    settings = Settings(temporal_address=temporal.address, namespace=namespace, toolset="demo")
    assert await run_setup(settings) == EXIT_NO_NAMESPACE
    (line,) = capsys.readouterr().err.strip().splitlines()
    hint = re.search(r"\((temporal operator namespace create [^)]*)\)", line)
    assert hint, line
    assert f"--retention 721h --address {temporal.address}" in hint.group(1)
    temporal_cli = str(Path(MCP_TASKS).parent / "temporal")
    created = await asyncio.to_thread(
        subprocess.run,
        [temporal_cli, *shlex.split(hint.group(1))[1:]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    # A new namespace reaches every Temporal service within seconds (its namespace cache).
    client = await Client.connect(temporal.address, namespace=namespace)
    async with asyncio.timeout(30):
        while True:
            with contextlib.suppress(ClusterProblem):
                await missing_search_attributes(client)
                break
            await asyncio.sleep(0.2)
    assert await run_setup(settings) == 0  # following the hint leaves nothing to warn about
    said = capsys.readouterr().out
    assert f"namespace {namespace}: retention 721h (721h needed" in said and "warning" not in said


async def test_tasks_list_on_a_namespace_not_set_up_or_missing_points_to_setup(
    temporal: TemporalDevServer, temporal_client: Client
) -> None:
    namespace = await a_namespace(temporal_client, retention_hours=721)
    env = {
        **clean_env(),
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_NAMESPACE": namespace,
    }
    done = await asyncio.to_thread(
        subprocess.run,
        [MCP_TASKS, "tasks", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert "search attribute" in line and "run `mcp-tasks setup`" in line, line
    absent = await asyncio.to_thread(
        subprocess.run,
        [MCP_TASKS, "tasks", "list"],
        env={**env, "MCP_TASKS_NAMESPACE": "no-such-namespace"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert absent.returncode != 0
    (line,) = absent.stderr.strip().splitlines()
    assert "MCP_TASKS_NAMESPACE" in line and "run `mcp-tasks setup`" in line, line


def test_a_worker_started_outside_the_repository_names_each_missing_directory(
    temporal: TemporalDevServer, tmp_path: Path
) -> None:
    """The demo toolset's deploy reads MCP_TASKS_PIPELINES_DIR and import_records
    MCP_TASKS_IMPORT_DIR, both relative to the working directory by default."""
    env = {
        **clean_env(),
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_TASK_QUEUE": f"outside-{uuid.uuid4().hex[:8]}",
    }
    out, err = tmp_path / "out.log", tmp_path / "err.log"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        worker = subprocess.Popen(
            [MCP_TASKS, "worker"],
            cwd=tmp_path,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while "mcp-tasks worker: up" not in out.read_text():
            assert worker.poll() is None, err.read_text()
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.1)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    warned = err.read_text()
    for variable, folder, tool in (
        ("MCP_TASKS_PIPELINES_DIR", "pipelines", "deploy"),
        ("MCP_TASKS_IMPORT_DIR", "imports", "import_records"),
    ):
        (line,) = [line for line in warned.splitlines() if f"{variable} names" in line]
        assert f"no directory {tmp_path / folder}" in line and tool in line, line
    assert "polling" in out.read_text() and f"Temporal {temporal.address}" in out.read_text()


def test_a_worker_in_the_repository_finds_every_directory_it_needs() -> None:
    root = Path(__file__).resolve().parents[2]
    settings = Settings(pipelines_dir=str(root / "pipelines"), import_dir=str(root / "imports"))
    registry = load_toolsets("demo", (), settings)
    assert {d.variable for d in registry.directories.values()} == {
        "MCP_TASKS_PIPELINES_DIR",
        "MCP_TASKS_IMPORT_DIR",
    }
    assert missing_directories(registry) == []
    elsewhere = load_toolsets("demo", (), Settings(pipelines_dir=str(root / "no-such-dir")))
    assert len(missing_directories(elsewhere)) == 1
