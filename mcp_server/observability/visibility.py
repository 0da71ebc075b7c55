"""The open-task gauges, refreshed in the background from Temporal's visibility store: never
on a request's path, at most every `metrics_refresh_s` seconds, per server replica, from the
first scrape of /metrics on (routes.py), so a server nobody scrapes asks nothing.

Every replica reports the same values (they are counted in Temporal, not in the replica), so
the alerts and panels take their `max` across replicas, never their sum.

Per task tool of the registry: a count of running tasks whose `McpStatus` is `working` and one
for `input_required` (Temporal counts cannot GROUP BY a custom search attribute); then the
waiting tasks are listed (their memo says since when they wait, `lastUpdatedAt`) for the age
of the oldest wait and the waits older than `input_wait_threshold_s`; the working tasks
started before `stalled_after_s` ago are listed for those whose state has not changed since
(stalled); each listing reads at most `max_listed` tasks. The workers polling the task queue
are counted by their pollers' last access (tasks/backend.py `pollers`). Every query is limited to
this deployment's task queue (`TaskQueue=`): another deployment in the same namespace has
gauges of its own.

Each round also runs the readiness check (probes.py, cached like /readyz), so that
`mcp_tasks_ready` follows Temporal whether or not anything calls /readyz (a compose stack's
healthcheck calls /healthz).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

from mcp_server.observability import metrics
from mcp_server.observability.probes import Readiness
from mcp_server.tasks.backend import TaskBackend
from mcp_tasks.contracts.task_status import OPEN_STATUSES, TASK_STATUSES, TaskStatus
from mcp_tasks.settings import Settings

log = logging.getLogger("mcp_server.observability.visibility")
STATUSES: tuple[TaskStatus, ...] = tuple(s for s in TASK_STATUSES if s in OPEN_STATUSES)


class OpenTaskGauges:
    def __init__(
        self,
        backend: TaskBackend,
        tools: list[str],
        settings: Settings,
        max_listed: int = 10_000,
        readiness: Readiness | None = None,
    ) -> None:
        self.backend = backend
        self.readiness = readiness
        self.tools = tools
        self.every_s = settings.metrics_refresh_s
        self.task_queue = settings.task_queue
        self.poller_max_age = timedelta(seconds=settings.ready_poller_max_age_s)
        self.wait_threshold_s = settings.input_wait_threshold_s
        self.stalled_after_s = settings.stalled_after_s
        self.max_listed = max_listed
        self._refreshing: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Refresh in the background from now on (a second call does nothing)."""
        if self._refreshing is None:
            self._refreshing = asyncio.create_task(self.run())

    async def stop(self) -> None:
        if self._refreshing is not None:
            self._refreshing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refreshing

    async def refresh(self) -> None:
        counts = {
            (tool, status): await self.backend.count_running(tool, status, self.task_queue)
            for tool in self.tools
            for status in STATUSES
        }
        waits = await self._ages("input_required", None)
        since = datetime.now(UTC) - timedelta(seconds=self.stalled_after_s)
        # stalled for X: started more than X ago, which the visibility store can filter on
        working = await self._ages("working", since)
        live, _ = await self.backend.pollers(self.task_queue, self.poller_max_age)
        metrics.WORKERS_POLLING.set(live)
        for (tool, status), count in counts.items():
            metrics.OPEN_TASKS.labels(tool, status).set(count)
        late = Counter(tool for tool, age in waits if age > self.wait_threshold_s)
        stalled = Counter(tool for tool, age in working if age > self.stalled_after_s)
        for tool in self.tools:
            metrics.INPUT_WAIT_OLDEST.labels(tool).set(
                max((age for of, age in waits if of == tool), default=0.0)
            )
            metrics.INPUT_WAITS_OVER_THRESHOLD.labels(tool).set(late[tool])
            metrics.STALLED_TASKS.labels(tool).set(stalled[tool])
        metrics.VISIBILITY_REFRESHED_AT.set(time.time())

    async def _ages(
        self, status: TaskStatus, started_before: datetime | None
    ) -> list[tuple[str, float]]:
        """(tool, seconds since its state last changed) of the running tasks in `status`."""
        running = await self.backend.running(
            status, self.task_queue, started_before, self.max_listed
        )
        now = datetime.now(UTC)
        ages: list[tuple[str, float]] = []
        for state in running:
            if state.tool not in self.tools:
                continue
            try:
                since = datetime.fromisoformat(state.last_updated_at.replace("Z", "+00:00"))
            except ValueError:
                continue
            ages.append((state.tool, max(0.0, (now - since).total_seconds())))
        return ages

    async def run(self) -> None:
        """Refresh until cancelled; a failed refresh is counted and logged, never raised."""
        while True:
            if self.readiness is not None:
                try:
                    await self.readiness.check()  # sets mcp_tasks_ready; logs what failed
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    log.warning("readiness not checked: %s", err)
            try:
                await self.refresh()
                metrics.VISIBILITY_REFRESHES.labels("ok").inc()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                metrics.VISIBILITY_REFRESHES.labels("error").inc()
                log.warning("open-task gauges not refreshed: %s", err)
            await asyncio.sleep(self.every_s)
