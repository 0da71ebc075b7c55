"""Kubernetes probes.

- Liveness (`/healthz`): the process serves HTTP. No Temporal call: a Temporal outage must not
  get every replica restarted.
- Readiness (`/readyz`): this replica can serve: Temporal answers its health check, and the
  search attributes McpStatus/McpTool/McpOwner/McpApprovers are registered (asked until seen
  once; they stay). It does NOT require a worker: reads, answers and cancels work without one
  (Temporal keeps them until a worker runs), and a worker outage taking every replica out of
  the load balancer would turn a stall into an outage. A missing worker is reported by
  `mcp_tasks_workers_polling` (visibility.py) and the McpTasksNoWorkerPolling alert. Each
  failed check is named in `missing`.
- In `mcp-tasks dev` and `stdio --dev`, readiness also shows the supervised embedded Temporal
  (`engine`: `running` or `restarting`, its restarts, the current or last outage with its
  reason and length). While it restarts, `/readyz` is 503 with `missing: ["temporal"]` and
  `temporal: "unreachable: <why it went>"`, without a call to wait out; once it is back, the
  usual checks run again and `engine.lastOutage` says what happened. Liveness stays 200
  throughout: the process is fine and repairs the engine itself, so it must not be restarted.
- `/readyz` is public, so its answer is cached for MCP_TASKS_READY_CACHE_S and shared by the
  requests that arrive while a check runs (single-flight): a flood of probes costs Temporal at
  most one check (one health-check RPC once the attributes were seen) per interval. Its body
  never names the Temporal address or repeats an error's text (which does): a failure is
  "unreachable" or "error" and the error's kind, and the full error goes to the server's log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from mcp_server.observability import metrics
from mcp_server.tasks.backend import TaskBackend
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTES

READY_CACHE_S = 2.0  # the default of MCP_TASKS_READY_CACHE_S

log = logging.getLogger(__name__)

# The state of the process's supervised embedded Temporal (runtime/supervisor.py), shown by
# /readyz; a server on a Temporal of its own has none.
EngineStatus = Callable[[], dict[str, Any]]


def liveness() -> dict[str, Any]:
    return {"status": "ok"}


Checked = tuple[bool, dict[str, Any]]


class Readiness:
    def __init__(
        self,
        backend: TaskBackend,
        cache_s: float = READY_CACHE_S,
        clock: Callable[[], float] = time.monotonic,
        engine: EngineStatus | None = None,
    ) -> None:
        self.backend = backend
        self.engine = engine
        self.cache_s = cache_s
        self._attributes_seen = False  # once registered, they stay: not asked again
        self._clock = clock
        self._last: tuple[float, Checked] | None = None
        self._running: asyncio.Future[Checked] | None = None

    async def check(self) -> Checked:
        """(ready, the body saying what is there and what is missing). The embedded engine's
        state is read on every call (it costs nothing, and an outage shows at once); the
        Temporal checks are the last ones when younger than `cache_s`, else the ones running,
        else new ones."""
        ready, body = await self._checked()
        metrics.READY.set(1 if ready else 0)  # for the McpTasksNotReady alert
        return ready, body

    async def _checked(self) -> Checked:
        engine = _public(self.engine()) if self.engine is not None else None
        if engine is not None and engine["state"] != "running":
            self._last = None  # what was checked before the outage no longer holds
            why = engine["outage"]["reason"]
            body = {
                "temporal": f"unreachable: {why}",
                "searchAttributes": "unknown",
                "engine": engine,
            }
            return False, {"status": "not ready", "missing": ["temporal"], **body}
        ready, checked = await self._temporal_checked()
        return ready, {**checked, "engine": engine} if engine is not None else checked

    async def _temporal_checked(self) -> Checked:
        if self._last is not None and self._clock() - self._last[0] < self.cache_s:
            return self._last[1]
        if self._running is None:
            self._running = asyncio.ensure_future(self._check_now())
            self._running.add_done_callback(self._remember)
        # shield: a prober that hangs up does not cancel the check the others wait on
        return await asyncio.shield(self._running)

    def _remember(self, done: asyncio.Future[Checked]) -> None:
        self._running = None
        if not done.cancelled() and done.exception() is None:
            self._last = (self._clock(), done.result())

    async def _check_now(self) -> Checked:
        body: dict[str, Any] = {"temporal": "ok", "searchAttributes": "ok"}
        missing: list[str] = []
        try:
            await self.backend.check_health()
        except Exception as err:
            log.warning("readiness: Temporal is unreachable: %s", err)
            body.update(temporal=f"unreachable: {_kind(err)}", searchAttributes="unknown")
            return False, {"status": "not ready", "missing": ["temporal"], **body}
        try:
            absent = await self._absent_attributes()
            if absent:
                body["searchAttributes"] = f"not registered: {', '.join(absent)}"
                missing.append("searchAttributes")
        except Exception as err:
            log.warning("readiness: a Temporal call failed: %s", err)
            body["temporal"] = f"error: {_kind(err)}"
            missing.append("temporal")
        ready = not missing
        return ready, {"status": "ready" if ready else "not ready", "missing": missing, **body}

    async def _absent_attributes(self) -> list[str]:
        if self._attributes_seen:
            return []
        registered = await self.backend.search_attributes()
        absent = [name for name in SEARCH_ATTRIBUTES if name not in registered]
        self._attributes_seen = not absent
        return absent


def _public(engine: dict[str, Any]) -> dict[str, Any]:
    """The engine's status without its address (in its own field or in an outage's reason)."""
    address = engine.get("address")
    shown = {key: value for key, value in engine.items() if key != "address"}
    for field in ("outage", "lastOutage"):
        outage = shown.get(field)
        if isinstance(outage, dict) and isinstance(address, str) and address:
            reason = str(outage.get("reason", ""))
            reason = reason.replace(f" at {address}", "").replace(address, "(its address)")
            shown[field] = {**outage, "reason": reason}
    return shown


def _kind(err: Exception) -> str:
    """What a public body may say of an error: its kind, and a gRPC status's name; never its
    text, which names the address it failed to reach."""
    status = getattr(err, "status", None)
    name = getattr(status, "name", None)
    return f"{type(err).__name__} {name}" if isinstance(name, str) else type(err).__name__
