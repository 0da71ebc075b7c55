"""The quota's side effects: which of the tasks a quota workflow holds slots for are gone, and
the release of a closing task's slot.

`find_closed`: `describe()` of each held task id, at most `CONCURRENCY` at a time: a task that
is no longer running is `closed` (it may be dropped at once: a taskId never runs again), one
Temporal does not know is `missing` (the quota workflow drops it only after a grace period,
since its start may still be on its way). Any other error fails the attempt, so nothing is
dropped on a guess.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks.contracts.quota import (
    FIND_CLOSED_ACTIVITY,
    RELEASE_ACTIVITY,
    RELEASE_SIGNAL,
    FoundTasks,
    HeldTasks,
    ReleaseSlot,
)

CONCURRENCY = 16


@activity.defn(name=FIND_CLOSED_ACTIVITY)
async def find_closed(held: HeldTasks) -> FoundTasks:
    client = activity.client()
    gate = asyncio.Semaphore(CONCURRENCY)
    found = FoundTasks(closed=[], missing=[])

    async def check(task_id: str) -> None:
        async with gate:
            try:
                description = await client.get_workflow_handle(task_id).describe()
            except RPCError as err:
                if err.status != RPCStatusCode.NOT_FOUND:
                    raise
                found.missing.append(task_id)
                return
        if description.status != WorkflowExecutionStatus.RUNNING:
            found.closed.append(task_id)

    await asyncio.gather(*(check(task_id) for task_id in held.task_ids))
    return found


@activity.defn(name=RELEASE_ACTIVITY)
async def release(slot: ReleaseSlot) -> None:
    """The release signal of a closing task (workflows/quota.py, `release_slot`), as a local
    activity: a retried one signals twice, which the quota workflow takes as one release."""
    handle = activity.client().get_workflow_handle(slot.quota_workflow_id)
    try:
        await handle.signal(RELEASE_SIGNAL, slot.task_id)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:  # gone: the quota workflow holds nothing
            raise


ACTIVITIES: list[Callable[..., Any]] = [find_closed, release]
