"""Draining and upgrading workers: the shutdown grace is a setting, and a
worker given a deployment name and a build id is a Worker Deployment Version whose tasks are
pinned to it.

The pinning test runs on the real dev server (the session's `temporal` fixture): Worker
Versioning is the server's (its deployment APIs and the execution's versioning info), which
no fake holds to the real thing. Only the server's own `SetWorkerDeploymentCurrentVersion`
is called besides the worker: the same call as `temporal worker deployment set-current-version`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import VersioningBehavior as WireBehavior
from temporalio.api.workflowservice.v1 import SetWorkerDeploymentCurrentVersionRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.common import VersioningBehavior
from temporalio.service import RPCError

from mcp_server.runtime.devserver import TemporalDevServer
from mcp_server.runtime.worker import build_worker, deployment_config
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.contracts.task_state import MEMO_KEY, TaskInput, TaskState, iso_timestamp
from mcp_tasks.settings import ConfigError, Settings
from workflows.quota import QUOTA_WORKFLOW, QuotaInput


def test_the_shutdown_grace_is_a_setting_with_a_default_that_lets_steps_finish() -> None:
    assert Settings().worker_shutdown_grace_s == 60.0
    grace = Settings.from_env({"MCP_TASKS_WORKER_SHUTDOWN_GRACE_S": "600"})
    assert grace.worker_shutdown_grace_s == 600.0
    with pytest.raises(ConfigError, match="MCP_TASKS_WORKER_SHUTDOWN_GRACE_S"):
        Settings.from_env({"MCP_TASKS_WORKER_SHUTDOWN_GRACE_S": "0"})


def test_an_unversioned_worker_has_no_deployment_and_half_a_version_is_refused() -> None:
    assert deployment_config(Settings()) is None
    with pytest.raises(ConfigError, match="MCP_TASKS_WORKER_BUILD_ID"):
        deployment_config(Settings(worker_deployment_name="mcp-tasks"))
    config = deployment_config(
        Settings(
            worker_deployment_name="mcp-tasks",
            worker_build_id="2026.12.04",
            worker_versioning_behavior="auto_upgrade",
        )
    )
    assert config is not None and config.use_worker_versioning
    assert config.version.build_id == "2026.12.04"
    assert config.default_versioning_behavior == VersioningBehavior.AUTO_UPGRADE


async def test_a_task_started_on_a_versioned_worker_is_pinned_to_its_build(
    temporal: TemporalDevServer, registry: ToolRegistry
) -> None:
    deployment = f"mcp-tasks-{uuid.uuid4().hex[:8]}"
    settings = Settings(
        task_queue=f"tests-{uuid.uuid4()}",
        worker_deployment_name=deployment,
        worker_build_id="build-1",
        worker_shutdown_grace_s=1,
    )
    client = await Client.connect(temporal.address)
    async with build_worker(client, settings, registry):
        await make_current(client, deployment, "build-1")
        task = TaskInput(
            task_id=f"mcp-task-{uuid.uuid4().hex}",
            tool="request_approval",
            arguments={"message": "Ship?"},
            created_at=iso_timestamp(datetime.now(UTC)),
            ttl_ms=None,
            poll_interval_ms=1000,
            owner="0" * 32,
        )
        handle = await client.start_workflow(
            "RequestApproval",
            task,
            id=task.task_id,
            task_queue=settings.task_queue,
            memo={MEMO_KEY: TaskState.initial(task, "Queued").to_memo()},
        )
        assert await behavior_of(handle) == WireBehavior.VERSIONING_BEHAVIOR_PINNED
        described = await handle.describe()
        info = described.raw_description.workflow_execution_info.versioning_info
        assert info.deployment_version.build_id == "build-1"
        assert info.deployment_version.deployment_name == deployment
        await handle.terminate()
        # The open-task quota workflow is not pinned: it outlives any one build.
        quota = await client.start_workflow(
            QUOTA_WORKFLOW,
            QuotaInput(owner="0" * 32),
            id=f"quota-{uuid.uuid4()}",
            task_queue=settings.task_queue,
        )
        assert await behavior_of(quota) == WireBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE
        await quota.terminate()


async def behavior_of(handle: WorkflowHandle[Any, Any]) -> int:
    """The versioning behavior of the execution, once its first workflow task completed."""
    deadline = time.monotonic() + 20
    while True:
        described = await handle.describe()
        info = described.raw_description.workflow_execution_info.versioning_info
        if info.behavior != WireBehavior.VERSIONING_BEHAVIOR_UNSPECIFIED:
            return int(info.behavior)
        assert time.monotonic() < deadline, f"no versioning behavior: {info}"
        await asyncio.sleep(0.2)


async def make_current(client: Client, deployment: str, build_id: str) -> None:
    """Make `build_id` the deployment's current version, once the server has seen it poll."""
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace, deployment_name=deployment, build_id=build_id
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            await client.workflow_service.set_worker_deployment_current_version(
                request, timeout=timedelta(seconds=5)
            )
            return
        except RPCError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
