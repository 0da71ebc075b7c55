"""The parked phase of `make bench` and the final count of lost or wrong tasks.

`count` `request_approval` tasks are created by 16 concurrent clients, drawn from a stream (a
client creates the next one when its last is acknowledged: nothing is held per task but its id
and owner), each creator with a principal of its own for `PER_PRINCIPAL` of them, so that the
quota (1,000 open tasks per principal) stays far away; then swept with tasks/get until every
one is `input_required`. With all of them parked: the RSS of each process, and tasks/get on a
random sample (each task read at most once per level, well within the poll limiter) at 1 and
16 clients against raw `describe()` of the same sample.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

from bench.floor_clients import (
    Clients,
    Ledger,
    Progress,
    bounded,
    per_client,
    side_by_side,
    state_of,
)
from bench.floor_ops import APPROVAL, PARKED, pair, sweep_until_parked, wait_parked
from bench.floor_raw import RawFloor
from bench.load_clients import LoadClient
from bench.run import percentiles
from mcp_server.protocol.frame.errors import INVALID_PARAMS, TASK_NOT_FOUND_MESSAGE

# How tasks/get refuses a task it does not know, or no longer: one past its TTL among them.
NOT_FOUND = f"'code': {INVALID_PARAMS}, 'message': '{TASK_NOT_FOUND_MESSAGE}'"
PER_PRINCIPAL = 400
CREATORS = 16
Entry = tuple[LoadClient, str]  # (owner, taskId)


def principals_for(count: int) -> int:
    """Principals for `count` tasks: a generation of `CREATORS` for each `CREATORS` x
    `PER_PRINCIPAL` tasks."""
    return CREATORS * max(1, math.ceil(count / (CREATORS * PER_PRINCIPAL)))


def owner_of(index: int) -> int:
    """The principal creating task `index`: the creators take turns, each with a principal of
    its own, and move to a fresh generation once each has made `PER_PRINCIPAL`."""
    return index // (CREATORS * PER_PRINCIPAL) * CREATORS + index % CREATORS


async def park(
    clients: Clients, ledger: Ledger, count: int, progress: Progress, timeout_s: float
) -> tuple[dict[str, Any], list[Entry]]:
    """Create and park `count` approvals; the figures, and every (owner, taskId)."""
    owners = clients.take(principals_for(count))
    created: list[Entry] = []
    latencies: list[float] = []

    async def one(index: int) -> None:
        owner = owners[owner_of(index)]
        started = time.perf_counter()
        arguments = {"message": f"Approve parked change #{index}?"}
        task_id = ledger.add(await clients.create(owner, APPROVAL, arguments), owner, PARKED)
        latencies.append(time.perf_counter() - started)
        created.append((owner, task_id))

    began = time.perf_counter()
    progress.set(f"creating {count:,} approvals", count)
    await bounded(range(count), CREATORS, one, progress)
    created_s = time.perf_counter() - began
    never = await wait_parked(clients, created, progress, timeout_s)
    figures = {
        "count": count,
        "principals": len(owners),
        "create": {**percentiles(latencies), "per_second": round(count / created_s, 1)},
        "all_created_after_s": round(created_s, 1),
        "all_parked_after_s": round(time.perf_counter() - began, 1),
        "never_parked": len(never),
    }
    return figures, created


async def park_raw(
    raw: RawFloor, count: int, progress: Progress, timeout_s: float
) -> dict[str, Any]:
    """The floor of `park`: `count` raw starts of the same approval workflow by `CREATORS`
    concurrent creators, then describe() sweeps until every one is at its question."""
    handles: list[str] = []

    async def one(index: int) -> None:
        handle = await raw.start(APPROVAL, {"message": f"Approve raw parked change #{index}?"})
        handles.append(handle.id)

    began = time.perf_counter()
    progress.set(f"raw floor: starting {count:,} approvals", count)
    await bounded(range(count), CREATORS, one, progress)
    created_s = time.perf_counter() - began
    pending = await sweep_until_parked(handles, raw.status, progress, timeout_s, "raw approvals")
    return {
        "count": count,
        "per_second": round(count / created_s, 1),
        "all_parked_after_s": round(time.perf_counter() - began, 1),
        "never_parked": len(pending),
    }


async def sample_reads(
    clients: Clients,
    raw: RawFloor,
    ledger: Ledger,
    parked: list[Entry],
    reads: int,
    level: int,
    rounds: int,
    progress: Progress,
) -> dict[str, Any]:
    """tasks/get of a random sample of the parked tasks by `level` clients (each read by its
    owner), against raw describe() of the same sample."""
    sample = random.sample(parked, min(reads, len(parked)))
    each = max(1, len(sample) // (level * rounds))
    cursor = {"ours": 0, "floor": 0}

    def next_of(side: str) -> Entry:
        cursor[side] += 1
        return sample[cursor[side] % len(sample)]

    async def ours(client: int, number: int) -> None:
        owner, task_id = next_of("ours")
        status = (await clients.get(owner, task_id))["status"]
        if status != PARKED:
            ledger.wrong[task_id] = f"read {status}"

    async def floor(client: int, number: int) -> None:
        await raw.describe(next_of("floor")[1])

    return pair(
        *await side_by_side(
            rounds,
            lambda _: per_client(level, each, ours, progress),
            lambda _: per_client(level, each, floor, progress),
        )
    )


async def count_lost(clients: Clients, ledger: Ledger, progress: Progress) -> dict[str, Any]:
    """Read every task the clients created, through its owner: a task not found within its
    TTL, found in another state than it must be in, or found past its TTL, is lost or wrong."""
    lost: dict[str, str] = dict(ledger.wrong)
    gone = 0  # not found past their TTL, as they must be
    progress.set("checking every task created", len(ledger.expected))

    async def check(entry: tuple[str, tuple[LoadClient, str]]) -> None:
        nonlocal gone
        task_id, (owner, expected) = entry
        expired = ledger.expired(task_id)
        try:
            task = await clients.get(owner, task_id)
        except RuntimeError as err:  # e.g. not found
            if expired is not False and NOT_FOUND in str(err):
                gone += 1
                return
            lost[task_id] = str(err)
            return
        if expired:
            lost[task_id] = f"{state_of(task)} after its TTL, expected not found"
        elif (seen := state_of(task)) != expected:
            lost[task_id] = f"{seen}, expected {expected}"

    await bounded(ledger.expected.items(), CREATORS, check, progress)
    detail = [f"{task_id}: {seen}" for task_id, seen in list(lost.items())[:10]]
    return {
        "checked": len(ledger.expected),
        "lost_or_wrong": len(lost),
        "gone_with_ttl": gone,
        "detail": detail,
    }
