"""The per-call phases of `make bench`, each through the server and through the raw client
(bench/floor_raw.py) with the same client behaviour: the same number of concurrent clients,
each making its calls one after another, the two sides' rounds interleaved, after one untimed
call of each new principal (warm_up).

- create: tools/call of `request_approval` (acknowledged with a taskId) against a raw
  `start_workflow` of the same RequestApproval workflow and TaskInput.
- get: tasks/get of those approvals, once all are parked at their question, against raw
  `describe()` of the same workflows.
- lifecycle: each client creates `bench_short_job` tasks (one 50 ms activity), one after
  another, and polls
  each to its end at the pollIntervalMs the server advertises; the floor starts the same
  workflow and polls `describe()` at that same interval (then reads the result), and, as the
  push floor, waits on `handle.result()`.
- cancel: tasks/cancel of a running `slow_compute`, then tasks/get every `poll_s` until it
  reads `cancelled`; the floor: `handle.cancel()`, then `describe()` at the same pace until
  the execution is CANCELED, and `handle.cancel()` + `handle.result()`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from temporalio.client import WorkflowExecutionStatus

from bench.floor_clients import (
    Clients,
    Ledger,
    Progress,
    bounded,
    per_client,
    side_by_side,
    state_of,
)
from bench.floor_raw import RawFloor
from bench.load_clients import LoadClient
from bench.run import percentiles

APPROVAL = "request_approval"
SHORT = "bench_short_job"  # bench/fixture_tools.py: one activity of `step_seconds`
TIMER = "slow_compute"  # a durable timer, which a cancellation request interrupts at once
PARKED = "input_required"
T = TypeVar("T")
Owned = dict[LoadClient, list[str]]


def pair(ours: list[float], floor: list[float]) -> dict[str, Any]:
    return {"server": percentiles(ours), "raw": percentiles(floor)}


async def warm_up(clients: Clients, raw: RawFloor, ledger: Ledger, mine: list[LoadClient]) -> None:
    """One untimed create per new principal (its first starts the principal's quota workflow,
    once in a client's life) and one raw start, before a measurement."""

    async def one(owner: LoadClient) -> None:
        arguments = {"message": "Approve the warm-up?"}
        ledger.add(await clients.create(owner, APPROVAL, arguments), owner, PARKED)

    await asyncio.gather(*(one(owner) for owner in mine))
    await raw.start(APPROVAL, {"message": "Approve the raw warm-up?"})


async def create(
    clients: Clients,
    raw: RawFloor,
    ledger: Ledger,
    level: int,
    count: int,
    rounds: int,
    progress: Progress,
) -> tuple[dict[str, Any], Owned]:
    """`count` creates through each side at `level` concurrent clients (a fresh principal
    each); the figures, and the server's tasks by owner."""
    mine = clients.take(level)
    await warm_up(clients, raw, ledger, mine)
    owned: Owned = {client: [] for client in mine}
    each = max(1, count // (level * rounds))

    async def ours(client: int, number: int) -> None:
        owner = mine[client]
        arguments = {"message": f"Approve bench change {client}.{number}?"}
        task_id = ledger.add(await clients.create(owner, APPROVAL, arguments), owner, PARKED)
        owned[owner].append(task_id)

    async def floor(client: int, number: int) -> None:
        await raw.start(APPROVAL, {"message": f"Approve raw change {client}.{number}?"})

    figures = pair(
        *await side_by_side(
            rounds,
            lambda _: per_client(level, each, ours, progress),
            lambda _: per_client(level, each, floor, progress),
        )
    )
    return figures, owned


async def wait_parked(
    clients: Clients, owned: list[tuple[LoadClient, str]], progress: Progress, timeout_s: float
) -> list[tuple[LoadClient, str]]:
    """Sweep tasks/get over the tasks not yet seen at their question, 16 at a time, until none
    is left or `timeout_s` has passed; the ones never seen parked."""

    async def status(entry: tuple[LoadClient, str]) -> str:
        return str((await clients.get(*entry))["status"])

    return await sweep_until_parked(owned, status, progress, timeout_s, "the tasks")


async def sweep_until_parked(
    items: Iterable[T],
    status: Callable[[T], Awaitable[str]],
    progress: Progress,
    timeout_s: float,
    what: str,
) -> list[T]:
    """Read the status of each item not yet seen parked, 16 at a time, a second apart, until
    none is left or `timeout_s` has passed; the ones never seen parked."""
    pending = list(items)
    deadline = time.monotonic() + timeout_s
    sweep = 0
    while pending and time.monotonic() < deadline:
        sweep += 1
        progress.set(f"sweep {sweep}: reading {what} not yet seen {PARKED}", len(pending))
        still: list[T] = []

        async def read(item: T, into: list[T] = still) -> None:
            if await status(item) != PARKED:
                into.append(item)

        await bounded(pending, 16, read, progress)
        pending = still
        if pending:
            await asyncio.sleep(1.0)
    return pending


async def reads(
    clients: Clients,
    raw: RawFloor,
    ledger: Ledger,
    owned: Owned,
    count: int,
    rounds: int,
    progress: Progress,
) -> dict[str, Any]:
    """`count` reads through each side, one client per owner, each reading its own tasks in
    turn (so no task is read faster than the poll limiter allows)."""
    owners = list(owned)
    each = max(1, count // (len(owners) * rounds))
    turn = dict.fromkeys(owners, 0)

    def next_of(client: int) -> tuple[LoadClient, str]:
        owner = owners[client]
        turn[owner] += 1
        return owner, owned[owner][turn[owner] % len(owned[owner])]

    async def ours(client: int, number: int) -> None:
        owner, task_id = next_of(client)
        task = await clients.get(owner, task_id)
        if task["status"] != ledger.expected[task_id][1]:
            ledger.wrong[task_id] = f"read {task['status']}"

    async def floor(client: int, number: int) -> None:
        await raw.describe(next_of(client)[1])

    return pair(
        *await side_by_side(
            rounds,
            lambda _: per_client(len(owners), each, ours, progress),
            lambda _: per_client(len(owners), each, floor, progress),
        )
    )


async def lifecycle(
    clients: Clients,
    raw: RawFloor,
    ledger: Ledger,
    level: int,
    each: int,
    body_s: float,
    progress: Progress,
) -> dict[str, Any]:
    """`level` clients, each running `each` short tasks to their end, through the server, the
    polling floor and the push floor (in that order); tasks/s and latency of each."""
    mine = clients.take(level)
    await warm_up(clients, raw, ledger, mine)
    intervals: list[int] = []

    async def ours(client: int, number: int) -> None:
        label = f"life-{client}-{number}"
        arguments = {"name": label, "steps": 1, "step_seconds": body_s}
        task = await clients.create(mine[client], SHORT, arguments)
        intervals.append(task["pollIntervalMs"])
        ledger.add(task, mine[client], f"completed:{label}")
        end = await clients.poll_to_end(mine[client], task)
        if state_of(end) != f"completed:{label}":
            ledger.wrong[task["taskId"]] = f"ended {state_of(end)}"

    async def floor(client: int, number: int, push: bool) -> None:
        label = f"raw-{client}-{number}"
        handle = await raw.start(SHORT, {"name": label, "steps": 1, "step_seconds": body_s})
        every = (intervals[0] if intervals else 500) / 1000
        end = await (raw.outcome(handle) if push else raw.poll_to_end(handle, every))
        if end != f"completed:{label}":
            raise RuntimeError(f"the raw floor's {handle.id} ended {end}")

    figures: dict[str, Any] = {"clients": level, "tasks_per_client": each, "body_s": body_s}
    sides = {
        "server": ours,
        "raw_poll": lambda c, n: floor(c, n, False),
        "raw_push": lambda c, n: floor(c, n, True),
    }
    for side, job in sides.items():
        began = time.perf_counter()
        samples = await per_client(level, each, job, progress)
        wall = time.perf_counter() - began
        figures[side] = {**percentiles(samples), "tasks_per_s": round(len(samples) / wall, 1)}
    figures["poll_interval_ms"] = intervals[0] if intervals else None
    return figures


async def cancel(
    clients: Clients, raw: RawFloor, ledger: Ledger, count: int, poll_s: float, progress: Progress
) -> dict[str, Any]:
    """`count` running tasks cancelled one after another through each side; the time from the
    cancellation request to the terminal state seen."""
    (owner,) = clients.take(1)
    await warm_up(clients, raw, ledger, [owner])
    ours = [
        ledger.add(await clients.create(owner, TIMER, {"seconds": 3600}), owner, "cancelled")
        for _ in range(count)
    ]
    polled = [await raw.start(TIMER, {"seconds": 3600}) for _ in range(count)]
    pushed = [await raw.start(TIMER, {"seconds": 3600}) for _ in range(count)]
    progress.set("waiting until the tasks to cancel run", 3 * count)
    for task_id in ours + [h.id for h in polled + pushed]:  # its timer started
        deadline = time.monotonic() + 60
        while not (await raw.status_message(task_id)).startswith("Computing"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{task_id} did not start within 60 s")
            await asyncio.sleep(0.05)
        progress.done += 1
    samples: dict[str, list[float]] = {"server": [], "raw_poll": [], "raw_push": []}
    for task_id, poll, push in zip(ours, polled, pushed, strict=True):
        began = time.perf_counter()
        await owner.rpc("tasks/cancel", {"taskId": task_id}, task_id)
        while True:
            if (await clients.get(owner, task_id))["status"] == "cancelled":
                break
            await asyncio.sleep(poll_s)
        samples["server"].append(time.perf_counter() - began)
        began = time.perf_counter()
        await poll.cancel()
        while True:
            if (await poll.describe()).status == WorkflowExecutionStatus.CANCELED:
                break
            await asyncio.sleep(poll_s)
        samples["raw_poll"].append(time.perf_counter() - began)
        began = time.perf_counter()
        await push.cancel()
        if (end := await raw.outcome(push)) != "cancelled":
            raise RuntimeError(f"the raw floor's {push.id} ended {end}")
        samples["raw_push"].append(time.perf_counter() - began)
    return {"poll_ms": poll_s * 1000, **{k: percentiles(v) for k, v in samples.items()}}
