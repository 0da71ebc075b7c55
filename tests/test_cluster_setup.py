"""`mcp-tasks setup` (runtime/setup_command.py, temporal/setup.py), in process against the
session's Temporal dev server: a namespace of its own with a short retention, the warning
that names the fix, each registration said, and nothing the second time. What a cluster
refuses (permission) and an unreachable one are one line with their exit code."""

from __future__ import annotations

import os
import subprocess
import uuid
from types import SimpleNamespace
from typing import Any, cast

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.setup_command import run_setup
from mcp_server.temporal.setup import (
    EXIT_DENIED,
    EXIT_NO_NAMESPACE,
    EXIT_NOT_SET_UP,
    EXIT_UNREACHABLE,
    ClusterProblem,
    register_missing,
    require_ready,
)
from mcp_tasks.settings import Settings
from tests.dev_process import MCP_TASKS
from workflows.task_state import SEARCH_ATTRIBUTES


async def a_namespace(client: Client, retention_hours: int) -> str:
    name = f"setup-{uuid.uuid4().hex[:8]}"
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=name,
            workflow_execution_retention_period=Duration(seconds=retention_hours * 3600),
        )
    )
    return name


async def test_setup_warns_of_a_short_retention_registers_each_attribute_then_changes_nothing(
    temporal: TemporalDevServer, temporal_client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = await a_namespace(temporal_client, retention_hours=24)
    settings = Settings(temporal_address=temporal.address, namespace=namespace, toolset="demo")
    assert await run_setup(settings) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[1] == f"namespace {namespace}: retention 24h (721h needed by the longest tool " \
        "TTL plus its grace)"  # fmt: skip
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
