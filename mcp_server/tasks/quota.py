"""Reservations of open-task slots in the principal's quota workflow (workflows/quota.py).

Rules implemented:
- A slot is reserved with update-with-start (`USE_EXISTING`): the first reservation of a
  principal starts its quota workflow, every later one joins it. The workflow decides; this
  module only asks, so the quota is exact across replicas.
- Reservations of one principal that arrive while one is in flight from this process go out
  together as the next update (one update per principal at a time from a replica): bursts cost
  fewer updates, and Temporal's limit on updates in flight per workflow is never what refuses.
- An update needs a worker. When none has answered within `wait_s`, the create is refused with
  `BackendUnavailable` (a 503 with `Retry-After`): no task is started without a slot. When
  Temporal answers a health check then, it is `NoWorker`, whose message names the worker.
- A caller that gives up while its reservation is in flight does not leak the slot: a slot
  granted after it left is released at once.
- `release()` is a signal: it needs no worker, and a failed one is logged only, since the quota
  workflow reclaims slots of tasks that never started.
- Lazy slots (`lazy_release`, on by default): a reservation asks for slots granted below an
  eighth of the limit (`LAZY_SHARE`) to be lazy; the answer names them, and their tasks send no
  release (the quota workflow finds them closed itself: workflows/quota.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import BackendRefused, BackendUnavailable, NoWorker, TaskError
from mcp_tasks.contracts.quota import RELEASE_SIGNAL
from workflows.quota import (
    QUOTA_WORKFLOW,
    RESERVE_UPDATE,
    TASK_TIMEOUT,
    QuotaInput,
    ReserveAnswer,
    ReserveRequest,
    quota_workflow_id,
)

log = logging.getLogger("mcp_server.tasks.quota")

# The default of `Settings.quota_worker_wait_s`.
WAIT_S = 10.0
# Slots granted while fewer than limit // LAZY_SHARE are held are lazy: at most that many
# describes a second while a principal keeps asking at its limit (workflows/quota.py).
LAZY_SHARE = 8
RETRY_AFTER_S = 5.0
# How long the check that tells "no worker" from "no Temporal" waits for Temporal.
HEALTH_TIMEOUT = timedelta(seconds=2)
# Besides an unreachable Temporal: Temporal's cap on updates in flight per workflow
# (RESOURCE_EXHAUSTED) and a quota workflow whose last workflow task failed, which Temporal
# retries and meanwhile admits no update (FAILED_PRECONDITION): both pass, so retry later.
# CANCELLED: an rpc_timeout of ours expired ("Timeout expired").
_UNAVAILABLE = {
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.CANCELLED,
    RPCStatusCode.RESOURCE_EXHAUSTED,
    RPCStatusCode.FAILED_PRECONDITION,
}


class QuotaExceeded(TaskError):
    """Every open-task slot of the principal is held."""

    def __init__(self, open_tasks: int, limit: int) -> None:
        super().__init__(f"{open_tasks} open tasks, limit {limit}")
        self.open_tasks = open_tasks
        self.limit = limit


@dataclass
class _Waiting:
    task_id: str
    answer: asyncio.Future[ReserveAnswer]


class QuotaReservations:
    def __init__(
        self, client: Client, task_queue: str, wait_s: float = WAIT_S, lazy_release: bool = True
    ) -> None:
        self._client = client
        self._task_queue = task_queue
        self._wait_s = wait_s
        self._lazy_release = lazy_release
        self._queued: dict[tuple[str, int], list[_Waiting]] = {}
        self._senders: dict[tuple[str, int], asyncio.Task[None]] = {}
        self._releasing: set[asyncio.Task[None]] = set()

    def workflow_id(self, owner: str) -> str:
        return quota_workflow_id(self._task_queue, owner)

    async def reserve(self, owner: str, task_id: str, limit: int) -> ReserveAnswer:
        """Hold one of `owner`'s `limit` slots for `task_id`, or raise QuotaExceeded (or
        BackendUnavailable / BackendRefused). Returns the quota workflow's answer."""
        answer = await self.reserve_ids(owner, [task_id], limit)
        if task_id not in answer.granted:
            raise QuotaExceeded(answer.open_tasks, limit)
        return answer

    async def reserve_ids(self, owner: str, task_ids: list[str], limit: int) -> ReserveAnswer:
        """Ask for a slot for each of `task_ids` in the next update: the answer says which
        were granted (the others were refused: the quota was full)."""
        loop = asyncio.get_running_loop()
        waiting = [_Waiting(task_id, loop.create_future()) for task_id in task_ids]
        key = (owner, limit)
        self._queued.setdefault(key, []).extend(waiting)
        if key not in self._senders:
            self._senders[key] = asyncio.create_task(self._send_queued(key))
        try:
            answers = await asyncio.shield(asyncio.gather(*(w.answer for w in waiting)))
        except asyncio.CancelledError:
            for w in waiting:
                w.answer.add_done_callback(functools.partial(self._undo, owner, w.task_id))
            raise
        return answers[0]

    def _undo(self, owner: str, task_id: str, done: asyncio.Future[ReserveAnswer]) -> None:
        if not done.cancelled() and done.exception() is None and task_id in done.result().granted:
            releasing = asyncio.get_running_loop().create_task(self.release(owner, task_id))
            self._releasing.add(releasing)
            releasing.add_done_callback(self._releasing.discard)

    async def _send_queued(self, key: tuple[str, int]) -> None:
        owner, limit = key
        try:
            while batch := self._queued.pop(key, None):
                try:
                    answer = await self._ask(owner, [w.task_id for w in batch], limit)
                except BaseException as err:
                    _settle(batch, error=err)
                    if isinstance(err, asyncio.CancelledError):
                        raise
                    continue
                _settle(batch, answer=answer)
        finally:
            self._senders.pop(key, None)
            _settle(self._queued.pop(key, []))

    async def _ask(self, owner: str, task_ids: list[str], limit: int) -> ReserveAnswer:
        request = ReserveRequest(task_ids, limit, limit // LAZY_SHARE if self._lazy_release else 0)
        try:
            async with asyncio.timeout(self._wait_s):
                try:
                    return await self._update_with_start(owner, request)
                except RPCError as err:
                    if err.status != RPCStatusCode.NOT_FOUND:
                        raise
                    # The quota workflow closed (idle) between admitting the update and
                    # running it: the next update-with-start starts a new one.
                    return await self._update_with_start(owner, request)
        except WorkflowUpdateFailedError as err:
            raise BackendRefused("Temporal", "reserve a task slot", str(err.cause)) from err
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
            if _cancelled_from_outside():
                raise
            if await self._temporal_answers():  # then the worker is what is missing
                raise NoWorker(self._task_queue, self._wait_s, RETRY_AFTER_S) from err
            raise BackendUnavailable(
                "Temporal",
                f"reserve a task slot: no answer within {self._wait_s:g} s",
                RETRY_AFTER_S,
            ) from err
        except RPCError as err:
            if err.status in _UNAVAILABLE:
                raise BackendUnavailable(
                    "Temporal", f"reserve a task slot: {err.message}", RETRY_AFTER_S
                ) from err
            raise BackendRefused("Temporal", "reserve a task slot", err.message) from err

    async def _temporal_answers(self) -> bool:
        try:
            return await self._client.service_client.check_health(timeout=HEALTH_TIMEOUT)
        except Exception:
            return False

    async def _update_with_start(self, owner: str, request: ReserveRequest) -> ReserveAnswer:
        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            QUOTA_WORKFLOW,
            QuotaInput(owner),
            id=self.workflow_id(owner),
            task_queue=self._task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            static_summary="MCP open-task quota",
            task_timeout=TASK_TIMEOUT,
        )
        answer: ReserveAnswer = await self._client.execute_update_with_start_workflow(
            RESERVE_UPDATE,
            request,
            start_workflow_operation=start,
            id=f"reserve-{uuid.uuid4().hex}",
            result_type=ReserveAnswer,
            rpc_timeout=timedelta(seconds=self._wait_s),
        )
        return answer

    async def release(self, owner: str, task_id: str) -> None:
        try:
            await self._client.get_workflow_handle(self.workflow_id(owner)).signal(
                RELEASE_SIGNAL, task_id, rpc_timeout=timedelta(seconds=5)
            )
        except RPCError as err:  # reclaimed later: a task that never started is not found
            log.warning("could not release the quota slot of %s: %s", task_id, err.message)


def _cancelled_from_outside() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _settle(
    batch: Iterable[_Waiting],
    *,
    answer: ReserveAnswer | None = None,
    error: BaseException | None = None,
) -> None:
    for waiting in batch:
        if waiting.answer.done():
            continue
        if answer is not None:
            waiting.answer.set_result(answer)
        elif error is None or isinstance(error, asyncio.CancelledError):
            waiting.answer.cancel()
        else:
            waiting.answer.set_exception(error)
