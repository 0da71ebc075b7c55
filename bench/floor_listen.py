"""The listen phase of `make bench`: push through `subscriptions/listen` against the push floor,
Temporal's own history long-poll through the raw client.

- notify: `rounds` approvals, one after another. Through the server: a listen stream on the
  task; once it shows the question, tasks/update answers it; the latency is from sending the
  update until the first `notifications/tasks` that no longer shows the question. The floor: a
  raw RequestApproval parked at its question, a history long-poll (`wait_new_event`) open after
  its last event, and the same answer sent as the same signal (`mcp.submit_input`); the
  latency is from sending the signal until a `describe()` made after the long-poll answered
  shows a state other than `input_required` (the server's watcher does the same: long-poll,
  then one read).
- idle: `streams` listen streams held open on as many parked approvals (one task each, from
  principals of 10 streams each, the per-caller limit). The CPU each process spends over
  `idle_s` seconds with the streams open (from 5 s after each showed its task, once their
  watchers have made their first read), against the same window with none open just before;
  the floor: Temporal's CPU over the same window with as many raw long-polls held open on as
  many parked raw approvals. Idle streams should cost about nothing: the target is that all of
  them together add under 1% of one core.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

import httpx

from bench.floor_clients import Clients, Ledger, Progress
from bench.floor_ops import APPROVAL, PARKED, sweep_until_parked, warm_up
from bench.floor_raw import RAW_OWNER, RawFloor
from bench.load_clients import LoadClient
from bench.run import META, cpu_seconds, percentiles
from mcp_tasks.contracts.task_state import SUBMIT_INPUT_SIGNAL, SubmitInput

APPROVE = {"decision": {"action": "accept", "content": {"decision": "approve"}}}
LISTEN = "subscriptions/listen"
STREAMS_PER_PRINCIPAL = 10  # the server's limit of open listen streams per caller
SETTLE_S = 5.0  # from the streams' first messages to their idle window


def principals_for(streams: int) -> int:
    """Principals the phase takes: one for the notify rounds, and one per 10 idle streams."""
    return 1 + -(-streams // STREAMS_PER_PRINCIPAL)


async def cpu_over(pids: dict[str, int], seconds: float) -> dict[str, float]:
    """Each process's CPU over the next `seconds`, as a percentage of one core."""
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    began = time.monotonic()
    await asyncio.sleep(seconds)
    wall = time.monotonic() - began
    return {
        name: round(100 * (cpu_seconds(pid) - before[name]) / wall, 2) for name, pid in pids.items()
    }


class Stream:
    """One listen stream through the server on one task: its notifications' states, in order."""

    def __init__(self, http: httpx.AsyncClient, url: str, owner: LoadClient, task_id: str) -> None:
        self.http, self.url, self.owner, self.task_id = http, url, owner, task_id
        self.states: asyncio.Queue[str] = asyncio.Queue()

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[Stream]:
        reader = asyncio.create_task(self._read())
        try:
            yield self
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _read(self) -> None:
        params = {"notifications": {"taskIds": [self.task_id]}, "_meta": META}
        body = {
            "jsonrpc": "2.0",
            "id": f"listen-{self.task_id}",
            "method": LISTEN,
            "params": params,
        }
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": LISTEN, **self.owner.auth}
        async with self.http.stream("POST", self.url, json=body, headers=headers) as response:
            if response.status_code != 200:
                raise RuntimeError(f"listen on {self.task_id}: HTTP {response.status_code}")
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    message = json.loads(line[len("data: ") :])
                    if message.get("method") == "notifications/tasks":
                        self.states.put_nowait(message["params"]["status"])
        raise RuntimeError(f"the listen stream of {self.task_id} ended")

    async def until(self, wanted: Callable[[str], bool]) -> str:
        """The first state that is `wanted` (within 60 s)."""
        async with asyncio.timeout(60):
            while not wanted(state := await self.states.get()):
                pass
        return state


async def raw_parked_approval(raw: RawFloor, label: str) -> str:
    handle = await raw.start(APPROVAL, {"message": f"Approve {label}?"})
    deadline = time.monotonic() + 60
    while await raw.status(handle.id) != PARKED:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the raw approval {handle.id} did not park within 60 s")
        await asyncio.sleep(0.02)
    return handle.id


async def notify(
    clients: Clients,
    raw: RawFloor,
    ledger: Ledger,
    http: httpx.AsyncClient,
    rounds: int,
    progress: Progress,
) -> dict[str, Any]:
    """From the answer sent to the change seen, through a listen stream and the raw floor, the
    two sides taking turns."""
    (owner,) = clients.take(1)
    await warm_up(clients, raw, ledger, [owner])
    ours: list[float] = []
    floor: list[float] = []
    progress.set("listen: answer to notification, both sides", 2 * rounds)
    for number in range(rounds):
        sides = [
            partial(_through_server, clients, owner, ledger, http, number, ours),
            partial(_through_raw, raw, number, floor),
        ]
        for side in sides if number % 2 == 0 else reversed(sides):
            await side()
            progress.done += 1
    return {"server": percentiles(ours), "raw": percentiles(floor)}


async def _through_server(
    clients: Clients,
    owner: LoadClient,
    ledger: Ledger,
    http: httpx.AsyncClient,
    number: int,
    into: list[float],
) -> None:
    task = await clients.create(owner, APPROVAL, {"message": f"Approve listen round {number}?"})
    task_id = ledger.add(task, owner, "completed:")
    async with Stream(http, owner.url, owner, task_id).opened() as stream:
        await stream.until(lambda state: state == PARKED)
        began = time.perf_counter()
        await owner.rpc("tasks/update", {"taskId": task_id, "inputResponses": APPROVE}, task_id)
        await stream.until(lambda state: state != PARKED)
        into.append(time.perf_counter() - began)


async def _through_raw(raw: RawFloor, number: int, into: list[float]) -> None:
    task_id = await raw_parked_approval(raw, f"raw listen round {number}")
    _, cursor = await raw.long_poll(task_id, b"")

    async def changed() -> None:
        nonlocal cursor
        while True:
            _, cursor = await raw.long_poll(task_id, cursor)
            if await raw.status(task_id) != PARKED:
                return

    watching = asyncio.create_task(changed())
    # Let the long-poll start; should the answer still reach Temporal first, the long-poll
    # returns at once with it, and the measure is the same.
    await asyncio.sleep(0)
    began = time.perf_counter()
    answer = SubmitInput(responses=APPROVE, principal=RAW_OWNER)
    await raw.client.get_workflow_handle(task_id).signal(SUBMIT_INPUT_SIGNAL, answer)
    async with asyncio.timeout(60):
        await watching
    into.append(time.perf_counter() - began)


async def idle(
    clients: Clients,
    raw: RawFloor,
    ledger: Ledger,
    http: httpx.AsyncClient,
    streams: int,
    idle_s: float,
    pids: dict[str, int],
    progress: Progress,
) -> dict[str, Any]:
    """CPU with `streams` idle listen streams open, against none; and the raw floor's."""
    temporal = next(name for name in pids if name.startswith("temporal"))
    owners = clients.take(principals_for(streams) - 1)
    await warm_up(clients, raw, ledger, owners)
    progress.set("listen: creating the approvals the idle streams follow", streams)
    ours: list[Stream] = []
    for index in range(streams):
        owner = owners[index // STREAMS_PER_PRINCIPAL]
        task = await clients.create(owner, APPROVAL, {"message": f"Approve idle {index}?"})
        ours.append(Stream(http, owner.url, owner, ledger.add(task, owner, PARKED)))
        progress.done += 1
    theirs = [
        (await raw.start(APPROVAL, {"message": f"Approve raw idle {index}?"})).id
        for index in range(streams)
    ]
    if never := await sweep_until_parked(theirs, raw.status, progress, 60, "raw approvals"):
        raise RuntimeError(f"raw approvals did not park within 60 s: {never}")
    progress.set(f"listen: CPU with none, then {streams} idle streams, then raw long-polls", 3)
    figures: dict[str, Any] = {"streams": streams, "window_s": idle_s}
    figures["none"] = await cpu_over(pids, idle_s)
    progress.done += 1
    async with contextlib.AsyncExitStack() as open_streams:
        for stream in ours:
            await open_streams.enter_async_context(stream.opened())
        for stream in ours:  # every stream has shown its task's current state
            await stream.until(lambda state: state == PARKED)
        # A new watcher's first long-poll answers at once with the history so far, which costs
        # it one read of its task (tasks/watchers.py): opening is not idling, so the window
        # begins once that is over, as the floor's begins after its first long-polls.
        await asyncio.sleep(min(SETTLE_S, idle_s))
        figures["streams_open"] = await cpu_over(pids, idle_s)
        if changed := [stream.task_id for stream in ours if not stream.states.empty()]:
            raise RuntimeError(f"idle tasks changed while their streams were open: {changed}")
    progress.done += 1
    cursors = [(await raw.long_poll(task_id, b""))[1] for task_id in theirs]
    polls = [
        asyncio.create_task(_hold(raw, task_id, cursor))
        for task_id, cursor in zip(theirs, cursors, strict=True)
    ]
    try:
        figures["raw_long_polls"] = await cpu_over({temporal: pids[temporal]}, idle_s)
    finally:
        for poll in polls:
            poll.cancel()
        await asyncio.gather(*polls, return_exceptions=True)
    progress.done += 1
    return figures


async def _hold(raw: RawFloor, task_id: str, cursor: bytes) -> None:
    """A raw long-poll held open on a task that does not change, renewed when Temporal ends it."""
    while True:
        count, cursor = await raw.long_poll(task_id, cursor)
        if count:
            raise RuntimeError(f"the raw idle approval {task_id} changed")


def stream_client(streams: int) -> httpx.AsyncClient:
    """An HTTP client with a connection for every stream (SSE holds its connection)."""
    limits = httpx.Limits(max_connections=streams + 8, max_keepalive_connections=streams + 8)
    return httpx.AsyncClient(timeout=httpx.Timeout(60, read=120), limits=limits)
