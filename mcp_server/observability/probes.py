"""Kubernetes probes.

- Liveness (`/healthz`): the process serves HTTP. No Temporal call: a Temporal outage must not
  get every replica restarted.
- Readiness (`/readyz`): Temporal answers, the search attributes
  McpStatus/McpTool/McpOwner/McpApprovers are registered, and a worker polls the task queue.
  Temporal keeps listing a poller well after its worker died, so a worker counts only while
  its poller's `last_access_time` is recent: a live worker polls again at least once per long
  poll (Temporal's `matching.longPollExpirationInterval`, 1 min by default), so
  `poller_max_age_s` (default 75 s) is that plus a margin. Each failed check is named in
  `missing`.
- In `mcp-tasks dev` and `stdio --dev`, readiness also shows the supervised embedded Temporal
  (`engine`: `running` or `restarting`, its restarts, the current or last outage with its
  reason and length). While it restarts, `/readyz` is 503 with `missing: ["temporal"]` and
  `temporal: "unreachable: <why it went>"`, without a call to wait out; once it is back, the
  usual checks run again and `engine.lastOutage` says what happened. Liveness stays 200
  throughout: the process is fine and repairs the engine itself, so it must not be restarted.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from workflows.task_state import SEARCH_ATTRIBUTES

_RPC_TIMEOUT = timedelta(seconds=2)

EngineStatus = Callable[[], dict[str, Any]]
_engine: EngineStatus | None = None


def report_engine(status: EngineStatus | None) -> None:
    """The process's supervised embedded Temporal (runtime/supervisor.py), shown by /readyz;
    None: no embedded engine (a server on a Temporal of its own)."""
    global _engine
    _engine = status


def liveness() -> dict[str, Any]:
    return {"status": "ok"}


class Readiness:
    def __init__(self, client: Client, task_queue: str, poller_max_age_s: float) -> None:
        self.client = client
        self.task_queue = task_queue
        self.poller_max_age = timedelta(seconds=poller_max_age_s)
        self._attributes_seen = False  # once registered, they stay: not asked again

    async def check(self) -> tuple[bool, dict[str, Any]]:
        """(ready, the body saying what is there and what is missing)."""
        body: dict[str, Any] = {"temporal": "ok", "searchAttributes": "ok"}
        missing: list[str] = []
        engine = _engine() if _engine is not None else None
        if engine is not None:
            body["engine"] = engine
            if engine["state"] != "running":
                why = engine["outage"]["reason"]
                body.update(temporal=f"unreachable: {why}", searchAttributes="unknown", workers=0)
                return False, {"status": "not ready", "missing": ["temporal"], **body}
        try:
            await self.client.service_client.check_health(timeout=_RPC_TIMEOUT)
        except Exception as err:
            body.update(temporal=f"unreachable: {err}", searchAttributes="unknown", workers=0)
            return False, {"status": "not ready", "missing": ["temporal"], **body}
        try:
            absent = await self._absent_attributes()
            if absent:
                body["searchAttributes"] = f"not registered: {', '.join(absent)}"
                missing.append("searchAttributes")
            live, stale = await self._pollers()
            body.update(workers=live, staleWorkers=stale)
            if not live:
                missing.append("workers")
        except Exception as err:
            body["temporal"] = f"error: {err}"
            missing.append("temporal")
        ready = not missing
        return ready, {"status": "ready" if ready else "not ready", "missing": missing, **body}

    async def _absent_attributes(self) -> list[str]:
        if self._attributes_seen:
            return []
        listed = await self.client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=self.client.namespace), timeout=_RPC_TIMEOUT
        )
        absent = [name for name in SEARCH_ATTRIBUTES if name not in listed.custom_attributes]
        self._attributes_seen = not absent
        return absent

    async def _pollers(self) -> tuple[int, int]:
        return await pollers(self.client, self.task_queue, self.poller_max_age)


async def pollers(client: Client, task_queue: str, max_age: timedelta) -> tuple[int, int]:
    """(workflow pollers of `task_queue` seen within `max_age`, pollers listed but older)."""
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        ),
        timeout=_RPC_TIMEOUT,
    )
    oldest = datetime.now(UTC) - max_age
    live = sum(
        1
        for poller in response.pollers
        if poller.HasField("last_access_time") and poller.last_access_time.ToDatetime(UTC) >= oldest
    )
    return live, len(response.pollers) - live
