"""The Temporal worker that runs the registry's task workflows and activities."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.worker import Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities import quota as quota_activities
from activities.webhooks import WebhookSender
from mcp_server.observability.sdk_metrics import export_worker_zeros
from mcp_server.observability.task_outcomes import TaskOutcomes
from mcp_server.runtime.config import Settings
from mcp_server.tasks.expiry import run_sweeper
from mcp_server.tools.registry import ToolRegistry
from mcp_server.webhooks.endpoints import load_endpoints
from workflows import quota
from workflows.secret_interceptor import SecretsInterceptor
from workflows.webhooks import WebhookDeliveryWorkflow

# The project's own workflow package, imported once per worker process instead of once per
# workflow run inside the sandbox. Safe because those modules import and call nothing
# non-deterministic, which tests/test_workflow_determinism.py checks statically; every other
# workflow module (a user's, a test's) stays fully sandboxed.
PASSED_THROUGH = ("workflows",)
# What a tool module (a user's `--tools` module, tests/fixture_tools.py) imports to declare its
# tools: definitions read at registration, never run by a workflow. Left in the sandbox, each
# run of such a module's workflow re-imported it and, with it, the settings (pydantic) and
# jsonschema: 584 ms of worker CPU per parked approval instead of 16 here, with deadlock
# warnings under load (`python -m bench.workflow_runner --user-module`, README "The workflow
# sandbox"). The workflow module itself stays fully sandboxed.
REGISTRATION_MODULES = ("mcp_server.tools.registry",)


def workflow_runner() -> WorkflowRunner:
    """The runner of every task workflow: the sandbox, with this project's workflow package and
    the tool registry passed through (the replay tests use the same runner as the worker)."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(
        *PASSED_THROUGH, *REGISTRATION_MODULES
    )
    return SandboxedWorkflowRunner(restrictions=restrictions)


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
    sender = WebhookSender(endpoints, settings.public_url)
    # Sync (`def`) activities, whose blocking I/O must stay off the event loop, run on this
    # pool: one thread per activity slot, so a slot never waits for a thread (threads are
    # made on demand).
    pool = ThreadPoolExecutor(settings.max_concurrent_activities, "mcp-tasks-activity")
    tools = sorted(tool.name for tool in registry.tools() if tool.task_support != "never")
    runtime = client.service_client.config.runtime or Runtime.default()
    export_worker_zeros(runtime.metric_meter, client.namespace, settings.task_queue, tools)
    return _PooledWorker(
        pool,
        client,
        task_queue=settings.task_queue,
        workflows=[*registry.workflows, *quota.WORKFLOWS, WebhookDeliveryWorkflow],
        workflow_runner=runner or workflow_runner(),
        activities=[*registry.activities, *quota_activities.ACTIVITIES, sender.deliver],
        # Secret arguments out of the exceptions the SDK logs and Temporal records.
        # Then the task SLIs (how tasks end, answer waits, activity retries), counted once.
        interceptors=[SecretsInterceptor(), TaskOutcomes(settings.activity_attempts_threshold)],
        max_cached_workflows=settings.max_cached_workflows,
        max_concurrent_activities=settings.max_concurrent_activities,
        # After a worker crash, its sticky queue would hold the next workflow task for the
        # default 10 s; 1 s lets a replacement worker take over quickly.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
        graceful_shutdown_timeout=timedelta(seconds=5),
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
