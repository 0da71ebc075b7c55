"""The open-task gauges, refreshed in the background from Temporal's visibility store: never
on a request's path, at most every `every_s` seconds, per server replica, from the first scrape
of /metrics on (routes.py), so a server nobody scrapes asks nothing.

Per task tool of the registry: a count of running tasks whose `McpStatus` is `working` and one
for `input_required` (Temporal counts cannot GROUP BY a custom search attribute); then the
waiting tasks are listed (their memo says since when they wait, `lastUpdatedAt`) for the age
of the oldest wait per tool, reading at most `max_listed` of them; and the workers polling the
task queue are counted as /readyz counts them (probes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC, datetime, timedelta

from temporalio.client import Client

from mcp_server.observability import metrics
from mcp_server.observability.probes import pollers
from mcp_server.tasks.memo import task_state_of
from workflows.task_state import (
    SEARCH_ATTRIBUTE_STATUS,
    SEARCH_ATTRIBUTE_TOOL,
)

log = logging.getLogger("mcp_server.observability.visibility")
_RPC_TIMEOUT = timedelta(seconds=5)
STATUSES = ("working", "input_required")


def _query(tool: str, status: str) -> str:
    return (
        f'{SEARCH_ATTRIBUTE_TOOL}="{tool}" AND {SEARCH_ATTRIBUTE_STATUS}="{status}" '
        'AND ExecutionStatus="Running"'
    )


class OpenTaskGauges:
    def __init__(
        self,
        client: Client,
        tools: list[str],
        every_s: float,
        task_queue: str,
        poller_max_age_s: float,
        max_listed: int = 10_000,
    ) -> None:
        self.client = client
        self.tools = tools
        self.every_s = every_s
        self.task_queue = task_queue
        self.poller_max_age = timedelta(seconds=poller_max_age_s)
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
            (tool, status): (await self.client.count_workflows(
                _query(tool, status), rpc_timeout=_RPC_TIMEOUT)).count
            for tool in self.tools for status in STATUSES
        }  # fmt: skip
        oldest = await self._oldest_waits()
        live, _ = await pollers(self.client, self.task_queue, self.poller_max_age)
        metrics.WORKERS_POLLING.set(live)
        for (tool, status), count in counts.items():
            metrics.OPEN_TASKS.labels(tool, status).set(count)
        for tool in self.tools:
            metrics.INPUT_WAIT_OLDEST.labels(tool).set(oldest.get(tool, 0.0))
        metrics.VISIBILITY_REFRESHED_AT.set(time.time())

    async def _oldest_waits(self) -> dict[str, float]:
        query = f'{SEARCH_ATTRIBUTE_STATUS}="input_required" AND ExecutionStatus="Running"'
        now = datetime.now(UTC)
        oldest: dict[str, float] = {}
        async for execution in self.client.list_workflows(
            query, limit=self.max_listed, page_size=1000, rpc_timeout=_RPC_TIMEOUT
        ):
            state = await task_state_of(execution)
            if state is None or state.tool not in self.tools:
                continue
            try:
                since = datetime.fromisoformat(state.last_updated_at.replace("Z", "+00:00"))
            except ValueError:
                continue
            age = max(0.0, (now - since).total_seconds())
            oldest[state.tool] = max(oldest.get(state.tool, 0.0), age)
        return oldest

    async def run(self) -> None:
        """Refresh until cancelled; a failed refresh is counted and logged, never raised."""
        while True:
            try:
                await self.refresh()
                metrics.VISIBILITY_REFRESHES.labels("ok").inc()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                metrics.VISIBILITY_REFRESHES.labels("error").inc()
                log.warning("open-task gauges not refreshed: %s", err)
            await asyncio.sleep(self.every_s)
