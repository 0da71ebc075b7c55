"""The Temporal worker that runs the registry's task workflows and activities.

- On SIGTERM it stops polling and gives the activities it runs `worker_shutdown_grace_s` to
  finish (then cancels them; their retries run on another worker).
- Unversioned by default. With `worker_deployment_name` and `worker_build_id` it is a Worker
  Deployment Version (Worker Versioning): each task is pinned to the build that started it
  (`worker_versioning_behavior=pinned`) or moves to the current build (`auto_upgrade`); the
  quota workflow, which lives as long as its principal has tasks, always moves
  (workflows/quota.py, AutoUpgradingQuotaWorkflow). docs/operations/maintenance.md says
  which to use.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.runtime import Runtime
from temporalio.worker import Worker, WorkerDeploymentConfig, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities import quota as quota_activities
from activities.callback_http import CallbackPolicy
from activities.delivery import DeliverySender
from activities.event_handshake import EndpointHandshakes
from activities.webhook_health import EndpointHealth, SuspensionPolicy
from mcp_server.observability.sdk_metrics import export_worker_zeros
from mcp_server.observability.task_outcomes import TaskOutcomes
from mcp_server.tasks.expiry import run_sweeper
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import ConfigError, Settings
from mcp_tasks.webhooks.endpoints import load_endpoints
from workflows import quota, session_tasks
from workflows.delivery import EventDeliveryWorkflow, WebhookDeliveryWorkflow
from workflows.event_subscriptions import EventSubscriptionsWorkflow
from workflows.secret_interceptor import SecretsInterceptor

# The project's own workflow package and the contracts it shares with activities and the server
# (mcp_tasks/contracts/), imported once per worker process instead of once per workflow run
# inside the sandbox. Safe because those modules import and call nothing non-deterministic,
# which tests/workflows/test_workflow_determinism.py checks statically; every other workflow
# module (a user's, a test's) stays fully sandboxed.
PASSED_THROUGH = ("workflows", "mcp_tasks.contracts")
# What a tool module (a user's `--tools` module, tests/fixture_tools.py) imports to declare its
# tools: definitions read at registration, never run by a workflow. Left in the sandbox, each
# run of such a module's workflow re-imported it and, with it, the settings (pydantic) and
# jsonschema: 584 ms of worker CPU per parked approval instead of 16 here, with deadlock
# warnings under load (`python -m bench.workflow_runner --user-module`; "The workflow sandbox"
# in docs/guides/changing-workflows.md). The workflow module itself stays fully sandboxed.
REGISTRATION_MODULES = ("mcp_server.tools.registry",)


def workflow_runner() -> WorkflowRunner:
    """The runner of every task workflow: the sandbox, with this project's workflow package and
    the tool registry passed through (the replay tests use the same runner as the worker)."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(
        *PASSED_THROUGH, *REGISTRATION_MODULES
    )
    return SandboxedWorkflowRunner(restrictions=restrictions)


def missing_directories(registry: ToolRegistry) -> list[str]:
    """One line per directory the toolset reads at run time that does not exist here, naming
    the setting and the path looked in. A worker logs them at start: its callers only ever
    hear that a pipeline or a source is not there, never where the worker looked."""
    lines = []
    for needed in registry.directories.values():
        where = Path(needed.path).resolve()
        if not where.is_dir():
            lines.append(
                f"{needed.variable} names {needed.path!r}, and there is no directory {where}: "
                f"{', '.join(needed.tools)} will fail until it exists (set {needed.variable} to "
                f"the directory on this host)"
            )
    return lines


class _PooledWorker(Worker):
    """A worker that owns the thread pool its sync activities run on: the pool is shut down
    once `run()` has returned, when the worker no longer runs any activity."""

    def __init__(self, pool: ThreadPoolExecutor, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, activity_executor=pool, **kwargs)
        self._pool = pool

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)


def build_worker(
    client: Client,
    settings: Settings,
    registry: ToolRegistry,
    runner: WorkflowRunner | None = None,
) -> Worker:
    """The worker; a ConfigError when the webhooks file (or a secret it names) is unusable.
    `runner` replaces `workflow_runner()` (bench/park_floor.py measures the unsandboxed one;
    nothing that serves tasks passes it)."""
    # The URLs and secrets of the webhook endpoints live here, never in a task's history.
    endpoints = load_endpoints(settings.webhooks_file, resolve_secrets=True)
    policy = SuspensionPolicy(
        settings.webhook_suspend_window_s,
        settings.webhook_suspend_min_attempts,
        settings.webhook_suspend_failure_rate,
    )
    callbacks = CallbackPolicy(settings.events_allow_private_addresses, settings.events_ca_file)
    sender = DeliverySender(endpoints, settings.public_url, EndpointHealth(policy), callbacks)
    handshakes = EndpointHandshakes(callbacks)
    # Sync (`def`) activities, whose blocking I/O must stay off the event loop, run on this
    # pool: one thread per activity slot, so a slot never waits for a thread (threads are
    # made on demand).
    pool = ThreadPoolExecutor(settings.max_concurrent_activities, "mcp-tasks-activity")
    versioning = deployment_config(settings)
    quota_workflows = quota.WORKFLOWS if versioning is None else quota.VERSIONED_WORKFLOWS
    tools = sorted(
        (tool.name, tool.workflow)
        for tool in registry.tools()
        if tool.task_support != "never" and tool.workflow is not None
    )
    runtime = client.service_client.config.runtime or Runtime.default()
    export_worker_zeros(runtime.metric_meter, client.namespace, settings.task_queue, tools)
    return _PooledWorker(
        pool,
        client,
        task_queue=settings.task_queue,
        workflows=[
            *registry.workflows,
            *quota_workflows,
            *session_tasks.WORKFLOWS,
            WebhookDeliveryWorkflow,
            EventSubscriptionsWorkflow,
            EventDeliveryWorkflow,
        ],
        workflow_runner=runner or workflow_runner(),
        activities=[
            *registry.activities,
            *quota_activities.ACTIVITIES,
            sender.deliver_webhook,
            sender.deliver_event,
            handshakes.verify_endpoint,
        ],
        # Secret arguments out of the exceptions the SDK logs and Temporal records.
        # Then the task SLIs (how tasks end, answer waits, activity retries), counted once.
        interceptors=[SecretsInterceptor(), TaskOutcomes(settings.activity_attempts_threshold)],
        max_cached_workflows=settings.max_cached_workflows,
        max_concurrent_activities=settings.max_concurrent_activities,
        # After a worker crash, its sticky queue would hold the next workflow task for the
        # default 10 s; 1 s lets a replacement worker take over quickly.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
        graceful_shutdown_timeout=timedelta(seconds=settings.worker_shutdown_grace_s),
        deployment_config=versioning,
    )


_BEHAVIORS = {
    "pinned": VersioningBehavior.PINNED,
    "auto_upgrade": VersioningBehavior.AUTO_UPGRADE,
}


def deployment_config(settings: Settings) -> WorkerDeploymentConfig | None:
    """The worker's Worker Deployment Version, None when it is unversioned; a ConfigError when
    only one of the deployment name and the build id is set."""
    name, build_id = settings.worker_deployment_name, settings.worker_build_id
    if name is None and build_id is None:
        return None
    if not name or not build_id:
        raise ConfigError(
            "Worker Versioning needs both MCP_TASKS_WORKER_DEPLOYMENT_NAME and "
            "MCP_TASKS_WORKER_BUILD_ID (or neither, for an unversioned worker)"
        )
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name=name, build_id=build_id),
        use_worker_versioning=True,
        default_versioning_behavior=_BEHAVIORS[settings.worker_versioning_behavior],
    )


@contextlib.asynccontextmanager
async def sweeping_expired_tasks(
    client: Client, settings: Settings, registry: ToolRegistry
) -> AsyncIterator[None]:
    """While inside: every `expiry_sweep_s`, delete the task queue's expired tasks
    (tasks/expiry.py), with the TTLs the registry's tools have at that moment."""

    def ttls() -> dict[str, int]:
        return {tool.name: tool.ttl_ms for tool in registry.tools() if tool.ttl_ms}

    sweeper = asyncio.create_task(
        run_sweeper(client, settings.task_queue, ttls, settings.expiry_sweep_s)
    )
    try:
        yield
    finally:
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
