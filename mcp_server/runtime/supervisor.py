"""Supervision of `mcp-tasks dev` (and `stdio --dev`): the embedded Temporal dev server and the
in-process worker are restarted when they die, and one `mcp-tasks dev` owns a data dir.

- `EngineSupervisor.run`: when the Temporal child dies (or the joined server goes away), one
  warning names the outage, then the server is started again (or its successor joined) on the
  same port and data dir, with a back-off of 0.5 s doubling to 30 s between failed or short-lived
  attempts (reset once it has stayed up for 60 s); one warning says it is back. The process's
  Temporal client and worker reconnect by themselves (the SDK retries its calls and polls).
  A process that joined the server waits a few seconds more before it starts one itself, so
  the process that started it, restarting at once, stays its owner.
- `status()`: what /readyz reports about the engine (observability/probes.py).
- `SupervisedWorker`: a worker that ends with an error is built again, with the same back-off.
- `claim_data_dir`: a second `mcp-tasks dev` on a data dir stops with one line naming the first.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from mcp_server.runtime.data_dir import open_private, private_data_dir
from mcp_server.runtime.devserver import TemporalDevServer

log = logging.getLogger("mcp_server.runtime.supervisor")

DEV_LOCK_FILE = "dev.lock"
# While a joiner waits before it starts a server itself.
JOINER_GRACE_S = 5.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Backoff:
    """0.5 s doubling to 30 s; back to 0.5 s once what it guards stayed up `stable_s`."""

    def __init__(self, first_s: float = 0.5, max_s: float = 30.0, stable_s: float = 60.0) -> None:
        self.first_s, self.max_s, self.stable_s = first_s, max_s, stable_s
        self.delay_s = first_s
        self._up_since: float | None = time.monotonic()

    def up(self) -> None:
        self._up_since = time.monotonic()

    def next_delay(self) -> float:
        """The wait before the next attempt; each call without a long enough run doubles it."""
        if self._up_since is not None and time.monotonic() - self._up_since >= self.stable_s:
            self.delay_s = self.first_s
        delay = self.delay_s
        self.delay_s = min(self.delay_s * 2, self.max_s)
        self._up_since = None  # down until up() says otherwise
        return delay


class EngineSupervisor:
    def __init__(self, temporal: TemporalDevServer, every_s: float = 0.5) -> None:
        self.temporal = temporal
        self.every_s = every_s
        self.backoff = Backoff()
        self.restarts = 0
        # While Temporal is down: when it went and why; after: the last outage.
        self.outage: dict[str, Any] | None = None
        self.last_outage: dict[str, Any] | None = None

    def status(self) -> dict[str, Any]:
        """The engine as /readyz shows it: `running` or `restarting`, and the outages."""
        state: dict[str, Any] = {
            "state": "restarting" if self.outage else "running",
            "address": self.temporal.address,
            "restarts": self.restarts,
        }
        if self.outage is not None:
            state["outage"] = self.outage
        if self.last_outage is not None:
            state["lastOutage"] = self.last_outage
        return state

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            if not self.temporal.running():
                await self._restart()

    async def _restart(self) -> None:
        temporal = self.temporal
        joined = temporal.joined is not None and temporal.process is None
        reason = f"the Temporal dev server at {temporal.address} {temporal.exit_reason()}"
        started, began = time.monotonic(), _now()
        self.outage = {"since": began, "reason": reason}
        if temporal.process is not None:
            temporal.process.wait()
            temporal.process = None
        delay = self.backoff.next_delay() + (JOINER_GRACE_S if joined else 0.0)
        log.warning("%s: restarting it on %s in %.1f s", reason, temporal.data_dir, delay)
        while True:
            await asyncio.sleep(delay)
            try:
                await temporal.start_or_join()
                break
            except (RuntimeError, OSError, TimeoutError) as err:
                if temporal.process is not None:  # launched but never answered
                    temporal.stop()
                delay = self.backoff.next_delay()
                self.outage["reason"] = f"{reason}; the last restart failed: {err}"
                log.warning(
                    "restarting the Temporal dev server failed (%s); next attempt in %.1f s",
                    err,
                    delay,
                )
        self.backoff.up()
        self.restarts += 1
        down_s = round(time.monotonic() - started, 1)
        self.last_outage = {"since": began, "until": _now(), "seconds": down_s, "reason": reason}
        self.outage = None
        if temporal.joined is not None:
            how = f"joined, pid {temporal.joined.pid}"
        else:
            how = f"restarted, pid {temporal.process.pid if temporal.process else '?'}"
        log.warning(
            "the Temporal dev server at %s is back (%s) after %.1f s", temporal.address, how, down_s
        )


class SupervisedWorker:
    """Runs the worker `build` makes; when it ends with an error (not asked to stop), builds and
    runs another after the back-off. `build` should connect a client of its own each time: a
    worker that failed before it started stays registered on its client, which then refuses
    another worker on the same task queue."""

    def __init__(self, build: Callable[[], Awaitable[Worker]]) -> None:
        self.build = build
        self.backoff = Backoff()
        self.restarts = 0
        self._worker: Worker | None = None
        # Whether self._worker's run() is under way (from its call to its return).
        self._running = False
        self._stopping = asyncio.Event()

    async def run(self) -> None:
        while not self._stopping.is_set():
            try:  # building (connecting) can fail too: retried like a failure
                self._worker = await self.build()
                if self._stopping.is_set():
                    # Asked to stop while connecting: a shutdown then found no worker to stop,
                    # and this one would poll on for ever (a `stdio --dev` host that closed
                    # stdin while its worker was still connecting never exited).
                    return
                self._running = True
                self.backoff.up()
                await self._worker.run()
                problem = "ended"
            except Exception as err:
                problem = f"failed: {str(err).splitlines()[0] if str(err) else repr(err)}"
            finally:
                self._running = False
            if self._stopping.is_set():
                return
            delay = self.backoff.next_delay()
            log.warning("the worker %s; starting a new one in %.1f s", problem, delay)
            self.restarts += 1
            try:
                await asyncio.wait_for(self._stopping.wait(), delay)
            except TimeoutError:
                pass

    def local_client(self) -> Client | None:
        """The client of the worker that runs now (None while none does): a start on it may
        hand its first workflow task straight to this worker (eager workflow start)."""
        worker = self._worker
        return worker.client if worker is not None and self._running else None

    async def shutdown(self) -> None:
        self._stopping.set()
        worker = self._worker
        # Also while its run() is still validating (not yet `is_running`): the SDK's shutdown
        # is safe then and makes that run() end as soon as it starts. Skipped, that worker
        # polled on for ever and its process never exited (a host that closed the stdio of a
        # `stdio --dev` right after its greeting).
        if worker is not None and self._running:
            await worker.shutdown()


def claim_data_dir(data_dir: Path, endpoint: str) -> int:
    """Hold the data dir for this `mcp-tasks dev` until the process exits (the kernel drops the
    lock then, even after `kill -9`); a second one stops here with a message naming the first.
    Returns the descriptor that holds the lock."""
    private_data_dir(data_dir)
    path = data_dir / DEV_LOCK_FILE
    fd = open_private(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        try:
            holder = json.loads(path.read_text())
            who = f"pid {holder['pid']}, MCP endpoint {holder['endpoint']}"
        except (OSError, ValueError, KeyError, TypeError):
            who = "starting"
        raise RuntimeError(
            f"another `mcp-tasks dev` ({who}) already runs on {data_dir}: use it, stop it "
            "first, or pass another --data-dir"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, (json.dumps({"pid": os.getpid(), "endpoint": endpoint}) + "\n").encode())
    return fd
