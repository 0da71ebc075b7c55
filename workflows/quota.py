"""The open-task quota of one principal: an exact count, kept by one workflow.

One `QuotaWorkflow` per (task queue, principal digest), ID `mcp-quota-<queue>-<digest>`. It is
not a task: no `mcp` memo, no `McpOwner` search attribute, so tasks/list, tasks/get and every
visibility query of the server pass it by.

Rules implemented:
- The server reserves a slot for a task before it starts the task, with update-with-start
  (`RESERVE_UPDATE`, one or more task ids). The check-and-add has no await inside: Temporal
  runs a workflow's handlers one at a time, so no two reservations, from any number of server
  replicas, can both take the last slot. A task id already held is granted again (a retried
  update is harmless), its reservation time renewed.
- A task releases its slot when it closes (completed, failed, cancelled): `RELEASE_SIGNAL`,
  sent by a local activity of the task workflow itself as it ends (`release_slot`), or by the
  server when the start failed.
- Lazy slots: a slot granted while fewer than the request's `lazy_below` slots are held (the
  server asks an eighth of the limit) is lazy: its task sends no release, which saves the
  signal and the quota workflow's workflow task per task of a principal far from its limit.
  Lazy slots are given back by describing their tasks (`FIND_CLOSED_ACTIVITY`): in the
  background once `lazy_batch` lazy slots were granted since the last such check, when the
  workflow has been idle, and before a reservation is refused (at most once per
  `LAZY_RECHECK`, as only lazy slots are checked then). So a reservation is refused only when
  the limit's worth of tasks is open; at most `lazy_below` describes per `LAZY_RECHECK` while
  a principal keeps asking at its limit.
- Leaks are reclaimed: when a reservation would be refused, and no reclaim ran in the last
  `RECLAIM_EVERY`, an activity describes every held task. Closed ones (terminated, timed out
  by their TTL) are dropped at once; not-found ones (the server died between reserve and
  start) once they were reserved more than `GRACE` ago. The refused reservation waits for that
  and is then decided again.
- History stays bounded: after `MAX_UPDATES_PER_RUN` reservations or `MAX_EVENTS_PER_RUN`
  events (or when Temporal suggests it) the workflow continues as new with its state, once
  every handler has finished. With nothing held and nothing happening for `IDLE`, it closes;
  the next reservation starts it again.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, VersioningBehavior
from temporalio.exceptions import ActivityError, FailureError, is_cancelled_exception

from mcp_tasks.contracts.quota import (
    FIND_CLOSED_ACTIVITY,
    RELEASE_ACTIVITY,
    RELEASE_SIGNAL,
    FoundTasks,
    HeldTasks,
    ReleaseSlot,
)
from mcp_tasks.contracts.task_state import TaskInput, iso_timestamp, parse_timestamp
from mcp_tasks.contracts.tool_messages import ToolResult

QUOTA_WORKFLOW = "McpQuota"
RESERVE_UPDATE = "mcp.quota.reserve"
# `TaskInput.quota_release` of the tasks that release by local activity: every task the server
# starts now. A task without it (started by an earlier server) releases with the signal
# command it always sent, so its history replays as it ran, with no patch marker in new ones.
RELEASE_BY_LOCAL_ACTIVITY = "local_activity"
# `TaskInput.quota_release` of a task on a lazy slot: it sends no release; the quota workflow
# finds it closed (QuotaWorkflow._check_lazy).
RELEASE_LAZILY = "lazy"
RECLAIM_EVERY = timedelta(seconds=10)
LAZY_RECHECK = timedelta(seconds=1)
LAZY_BATCH = 64
GRACE = timedelta(seconds=60)
IDLE = timedelta(hours=1)
MAX_UPDATES_PER_RUN = 500
# A run's history stays short enough that a worker which lost the workflow from its cache
# replays it well within the workflow task timeout, even on a loaded machine (a reservation and
# its release write about 7 events; `python -m bench.quota_replay` measures the replay).
MAX_EVENTS_PER_RUN = 400
# The workflow task timeout of a quota workflow: room for that replay on a slow worker, so a
# quota workflow never times out its own workflow tasks over and over.
TASK_TIMEOUT = timedelta(seconds=60)


def quota_workflow_id(task_queue: str, owner: str) -> str:
    """The quota workflow of `owner` (a principal digest, never a name) on `task_queue`."""
    return f"mcp-quota-{task_queue}-{owner}"


@dataclass
class QuotaInput:
    """The state a quota workflow starts with (and carries across continue-as-new)."""

    owner: str
    # Task id -> when its slot was reserved (ISO 8601).
    held: dict[str, str] = field(default_factory=dict)
    last_reclaim: str = ""
    # Held task ids whose tasks send no release (lazy slots).
    lazy: list[str] = field(default_factory=list)
    # Lazy slots granted between two background checks of them.
    lazy_batch: int = LAZY_BATCH
    # Reservations per run before continue-as-new, the idle time after which it closes, and
    # how long a held task may be missing from Temporal before its slot is reclaimed.
    max_updates: int = MAX_UPDATES_PER_RUN
    idle_s: float = IDLE.total_seconds()
    grace_s: float = GRACE.total_seconds()


@dataclass
class ReserveRequest:
    task_ids: list[str]
    limit: int
    # A slot granted while fewer than this many are held is lazy (0: none is).
    lazy_below: int = 0


@dataclass
class ReserveAnswer:
    granted: list[str]
    # Slots held once the request was decided.
    open_tasks: int
    # The granted ids whose tasks must send no release (lazy slots).
    lazy: list[str] = field(default_factory=list)


@workflow.defn(name=QUOTA_WORKFLOW)
class QuotaWorkflow:
    @workflow.init
    def __init__(self, start: QuotaInput) -> None:
        # Set here, not in run(): the reservation that started the workflow is handled in
        # its first workflow task, possibly before run() begins.
        self._start = start
        self._held = dict(start.held)
        self._lazy = dict.fromkeys(task_id for task_id in start.lazy if task_id in self._held)
        self._last_reclaim = parse_timestamp(start.last_reclaim) if start.last_reclaim else None
        self._last_lazy_check: datetime | None = None
        self._unchecked = 0  # lazy slots granted since the last check of them began
        self._reclaiming = False
        self._updates = 0
        self._activity = 0

    @workflow.run
    async def run(self, start: QuotaInput) -> None:
        del start  # read by __init__
        while True:
            seen = self._activity
            try:
                idle = timedelta(seconds=self._start.idle_s)
                await workflow.wait_condition(
                    lambda: self._should_roll() or self._lazy_check_due(), timeout=idle
                )
            except TimeoutError:
                if self._lazy and seen == self._activity:
                    await self._check_lazy()
                if not self._held and seen == self._activity and workflow.all_handlers_finished():
                    return
                continue
            if self._lazy_check_due():
                await self._check_lazy()
                continue
            await workflow.wait_condition(workflow.all_handlers_finished)
            last = iso_timestamp(self._last_reclaim) if self._last_reclaim else ""
            workflow.continue_as_new(
                replace(self._start, held=dict(self._held), last_reclaim=last, lazy=[*self._lazy])
            )

    def _should_roll(self) -> bool:
        info = workflow.info()
        return (
            self._updates >= self._start.max_updates
            or info.get_current_history_length() >= MAX_EVENTS_PER_RUN
            or info.is_continue_as_new_suggested()
        )

    @workflow.update(name=RESERVE_UPDATE)
    async def reserve(self, request: ReserveRequest) -> ReserveAnswer:
        self._updates += 1
        self._activity += 1
        granted = self._grant(request)
        refused = [task_id for task_id in request.task_ids if task_id not in granted]
        if refused and self._reclaim_due():
            await self._reclaim()
            granted += self._grant(replace(request, task_ids=refused))
        elif refused and self._lazy_recheck_due():
            await self._check_lazy()
            granted += self._grant(replace(request, task_ids=refused))
        lazy = [task_id for task_id in granted if task_id in self._lazy]
        return ReserveAnswer(granted=granted, open_tasks=len(self._held), lazy=lazy)

    @workflow.signal(name=RELEASE_SIGNAL)
    def release(self, task_id: str) -> None:
        self._activity += 1
        self._held.pop(task_id, None)
        self._lazy.pop(task_id, None)

    def _grant(self, request: ReserveRequest) -> list[str]:
        """Check-and-add, with no await: atomic."""
        granted: list[str] = []
        for task_id in request.task_ids:
            if task_id not in self._held:
                if len(self._held) >= request.limit:
                    continue
                if len(self._held) < request.lazy_below:
                    self._lazy[task_id] = None
                    self._unchecked += 1
            # Granted, or granted again (a retried update, or a keyed call's new run of its
            # expired task, whose lazy slot was never released): the reclaim's grace for a
            # task not yet started counts from now.
            self._held[task_id] = iso_timestamp(workflow.now())
            granted.append(task_id)
        return granted

    def _lazy_check_due(self) -> bool:
        return not self._reclaiming and self._unchecked >= self._start.lazy_batch

    def _lazy_recheck_due(self) -> bool:
        """Before a refusal: whether the lazy slots may be checked again now."""
        if not self._lazy:
            return False
        if self._reclaiming:
            return True  # join the one under way
        last = self._last_lazy_check
        return last is None or workflow.now() - last >= LAZY_RECHECK

    async def _check_lazy(self) -> None:
        """Free the lazy slots whose tasks have closed."""
        self._unchecked = 0
        self._last_lazy_check = workflow.now()
        await self._reclaim(lazy_only=True)

    def _reclaim_due(self) -> bool:
        if self._reclaiming:
            return True  # join the one under way
        last = self._last_reclaim
        return last is None or workflow.now() - last >= RECLAIM_EVERY

    async def _reclaim(self, lazy_only: bool = False) -> None:
        """Describe the held tasks (or only those of lazy slots) and drop the closed ones and
        those Temporal does not know past the grace."""
        if self._reclaiming:
            await workflow.wait_condition(lambda: not self._reclaiming)
            return
        self._reclaiming = True
        try:
            found: FoundTasks = await workflow.execute_activity(
                FIND_CLOSED_ACTIVITY,
                HeldTasks(sorted(self._lazy if lazy_only else self._held)),
                result_type=FoundTasks,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(maximum_attempts=3),
            )
        except ActivityError:
            workflow.logger.warning("quota reclaim failed; refusing as counted")
            found = FoundTasks([], [])
        finally:
            self._reclaiming = False
            if not lazy_only:
                self._last_reclaim = workflow.now()
        for task_id in found.closed:
            self._held.pop(task_id, None)
            self._lazy.pop(task_id, None)
        for task_id in found.missing:
            reserved = self._held.get(task_id)
            grace = timedelta(seconds=self._start.grace_s)
            if reserved is not None and _older_than(reserved, grace, workflow.now()):
                del self._held[task_id]
                self._lazy.pop(task_id, None)


def _older_than(moment: str, age: timedelta, now: datetime) -> bool:
    return now - parse_timestamp(moment) > age


async def release_slot(task: TaskInput) -> None:
    """Give the task's quota slot back, when it holds one.

    Sent as the release signal by a local activity (`RELEASE_ACTIVITY`, through the worker's
    client): it runs inside the workflow task that ends the task, so the release costs one
    marker event and no workflow task of its own, where a signal sent by the workflow costs
    two events and a workflow task more, since it must be acknowledged before the task may
    close. Retried as a local activity; should every attempt fail, the task still ends and the
    quota workflow's reclaim frees the slot. A quota workflow that is gone (it holds nothing
    then) is not an error. A task on a lazy slot sends nothing."""
    if not task.quota_workflow_id or task.quota_release == RELEASE_LAZILY:
        return
    if task.quota_release == RELEASE_BY_LOCAL_ACTIVITY:
        try:
            await workflow.execute_local_activity(
                RELEASE_ACTIVITY,
                ReleaseSlot(task.quota_workflow_id, task.task_id),
                start_to_close_timeout=timedelta(seconds=5),
                schedule_to_close_timeout=timedelta(seconds=60),
            )
        except ActivityError:  # a release must never fail the task
            workflow.logger.warning("could not release the quota slot of %s", task.task_id)
        return
    handle = workflow.get_external_workflow_handle(task.quota_workflow_id)
    try:
        await handle.signal(RELEASE_SIGNAL, task.task_id)
    except Exception:  # a release must never fail the task
        workflow.logger.warning("could not release the quota slot of %s", task.task_id)


Execute = Callable[[Any, TaskInput], Coroutine[Any, Any, ToolResult]]


def releasing_slot(execute: Execute) -> Execute:
    """`execute` that releases the task's slot as it ends, before the task publishes its last
    state (a task reads as closed only once its slot is free, a lazy slot's aside, which the
    quota workflow frees itself; the release must be awaited: a signal command in the workflow
    task that closes the task is dropped, measured). Only what closes the execution releases:
    a bug in workflow code fails the workflow task, which Temporal retries, and the task runs
    on. Wrapping twice (a subclass of a declared workflow)
    releases once. A continued-as-new run keeps the slot and its `TaskInput`, so releases the
    same way."""
    if getattr(execute, "_releases_slot", False):
        return execute

    async def run(self: Any, task: TaskInput) -> ToolResult:
        try:
            result = await execute(self, task)
        except BaseException as err:
            if isinstance(err, FailureError) or is_cancelled_exception(err):
                await release_slot(task)
            raise
        await release_slot(task)
        return result

    run._releases_slot = True  # type: ignore[attr-defined]
    return run


@workflow.defn(name=QUOTA_WORKFLOW, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class AutoUpgradingQuotaWorkflow(QuotaWorkflow):
    """The quota workflow as a worker under Worker Versioning registers it (the same type and
    code): it moves to each new current build instead of being pinned. It lives as long as its
    principal has open tasks, so pinned it would keep an old build polling for good; its
    changes go through workflow.patched either way. (Temporal refuses a versioning behavior
    from an unversioned worker, hence a declaration of its own.)"""

    @workflow.init
    def __init__(self, start: QuotaInput) -> None:
        super().__init__(start)

    @workflow.run
    async def run(self, start: QuotaInput) -> None:
        await super().run(start)


WORKFLOWS = [QuotaWorkflow]
# What a versioned worker registers instead (mcp_server/runtime/worker.py).
VERSIONED_WORKFLOWS = [AutoUpgradingQuotaWorkflow]
