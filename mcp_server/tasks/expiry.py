"""Expired tasks leave Temporal: a task past its TTL (ttl.py) is deleted, not only hidden.

Rules implemented:
- Reading an expired task deletes its workflow execution (`Deletions`, in the background: the
  "not found" answer keeps its common deadline, access.py). Deleting is idempotent: a task
  already gone is not an error, so replicas may race.
- A task nobody reads again is found by the sweeper of every worker (`sweep`, every
  `SWEEP_EVERY_S`): per tool of the registry with a TTL, the closed executions of its task
  queue started more than that TTL ago (visibility: `McpTool`, `TaskQueue`, `StartTime`),
  each deleted when its memo and close time say it has expired (`is_expired`, the rule
  tasks/get applies). Running executions are left to Temporal: their execution timeout is
  the TTL.
- Tasks without a TTL never expire; tasks of a tool no longer in the registry are left to the
  namespace's retention.
- A sweep that fails (Temporal unreachable) is logged and tried again at the next period.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.memo import task_state_of
from mcp_server.tasks.snapshots import snapshot_of
from mcp_server.tasks.ttl import closed_expired, is_expired
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_TOOL, iso_timestamp

log = logging.getLogger("mcp_server.tasks.expiry")

SWEEP_EVERY_S = 300.0
_RPC_TIMEOUT = timedelta(seconds=5)
_PER_SWEEP = 1000  # executions looked at per tool and sweep; the next sweep goes on


async def delete_task(client: Client, task_id: str, run_id: str) -> bool:
    """Delete the run `run_id` of the task's workflow (never another: a keyed task may have a
    new run by now); False when it was already gone. Temporal deletes a closed run in the
    background, within about a minute."""
    execution = WorkflowExecution(workflow_id=task_id, run_id=run_id)
    request = DeleteWorkflowExecutionRequest(
        namespace=client.namespace, workflow_execution=execution
    )
    try:
        await client.workflow_service.delete_workflow_execution(request, timeout=_RPC_TIMEOUT)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


class Deletions:
    """Deletes of expired tasks found by reads, run beside the request that found them."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._running: dict[str, asyncio.Task[None]] = {}

    def request(self, task_id: str, run_id: str) -> None:
        if run_id not in self._running:
            job = asyncio.get_running_loop().create_task(self._delete(task_id, run_id))
            self._running[run_id] = job
            job.add_done_callback(lambda _: self._running.pop(run_id, None))

    async def _delete(self, task_id: str, run_id: str) -> None:
        try:
            if await delete_task(self._client, task_id, run_id):
                log.info("deleted expired task %s", task_id)
        except RPCError as err:  # the sweeper tries again
            log.warning("could not delete expired task %s: %s", task_id, err.message)


async def sweep(
    client: Client, task_queue: str, ttls: Mapping[str, int], now: datetime
) -> list[str]:
    """Delete the expired closed tasks of `task_queue`, given each tool's TTL; their ids."""
    deleted: list[str] = []
    for tool, ttl_ms in sorted(ttls.items()):
        started_before = iso_timestamp(now - timedelta(milliseconds=ttl_ms))
        query = (
            f'{SEARCH_ATTRIBUTE_TOOL}="{tool}" AND TaskQueue="{task_queue}" '
            f'AND ExecutionStatus!="Running" AND StartTime<"{started_before}"'
        )
        async for execution in client.list_workflows(
            query, limit=_PER_SWEEP, rpc_timeout=_RPC_TIMEOUT
        ):
            state = await task_state_of(execution)
            if state is None or execution.status == WorkflowExecutionStatus.RUNNING:
                continue
            if execution.close_time is None:  # not closed after all: the running rule
                expired = is_expired(snapshot_of(state), now)
            else:
                closed_at = iso_timestamp(execution.close_time)
                expired = closed_expired(state.created_at, closed_at, state.ttl_ms, now)
            if expired and await delete_task(client, execution.id, execution.run_id):
                deleted.append(execution.id)
    return deleted


async def run_sweeper(
    client: Client,
    task_queue: str,
    ttls: Callable[[], Mapping[str, int]],
    every_s: float = SWEEP_EVERY_S,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """`sweep` every `every_s` seconds, with the TTLs `ttls()` names then, until cancelled."""
    while True:
        try:
            deleted = await sweep(client, task_queue, ttls(), clock())
            if deleted:
                log.info("deleted %d expired tasks of task queue %s", len(deleted), task_queue)
        except RPCError as err:
            log.warning("expired-task sweep failed, next in %g s: %s", every_s, err.message)
        await asyncio.sleep(every_s)
