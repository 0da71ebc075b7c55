"""The benchmark's clients of the server: one principal (bearer token) each, over one shared
connection pool (bench/load_clients.py's LoadClient: a 429 or 503 is retried after its
Retry-After and counted); the ledger of every task they created, with the state it must be found
in at the end; and the pacing helpers every phase uses."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bench.floor_raw import completed
from bench.load_clients import TERMINAL, LoadClient, Poster, Stats

Job = Callable[[int, int], Awaitable[None]]  # (client, call number)
# How far the server's start of a task's TTL and the ledger's may be apart.
TTL_MARGIN_S = 10.0


class Clients:
    """One LoadClient per token; phases `take` fresh principals, so that no principal comes near
    the open-task quota (1,000 by default), as separate users would not."""

    def __init__(self, url: str, tokens: list[str], http: Poster) -> None:
        self.stats = Stats()
        self.all = [LoadClient(url, token, self.stats, http) for token in tokens]
        self._next = 0

    def take(self, count: int) -> list[LoadClient]:
        taken = self.all[self._next : self._next + count]
        if len(taken) < count:
            raise RuntimeError(f"only {len(self.all)} principals were minted")
        self._next += count
        return taken

    async def create(self, client: LoadClient, tool: str, arguments: dict[str, Any]) -> Any:
        return await client.rpc("tools/call", {"name": tool, "arguments": arguments}, tool)

    async def get(self, client: LoadClient, task_id: str) -> dict[str, Any]:
        return await client.rpc("tasks/get", {"taskId": task_id}, task_id)

    async def poll_to_end(self, client: LoadClient, task: dict[str, Any]) -> dict[str, Any]:
        """tasks/get at the pollIntervalMs of each answer until the task is terminal."""
        while task["status"] not in TERMINAL:
            await asyncio.sleep(task["pollIntervalMs"] / 1000)
            task = await self.get(client, task["taskId"])
        return task


@dataclass
class Ledger:
    """Every task a client created (acknowledged with a taskId) and what it must end as; and
    when its TTL ends, after which it must be gone (a run longer than a tool's TTL, such as
    the 100,000 one, outlives the short tasks of its first phases)."""

    expected: dict[str, tuple[LoadClient, str]] = field(default_factory=dict)
    # taskId -> when (on `clock`) its TTL ends, counted from the acknowledgement.
    expires: dict[str, float] = field(default_factory=dict)
    # Seen in another state than expected while the phases ran: taskId -> what was seen.
    wrong: dict[str, str] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic

    def add(self, task: dict[str, Any], owner: LoadClient, expected: str) -> str:
        """Record the task a tools/call acknowledged; its taskId."""
        task_id = str(task["taskId"])
        self.expected[task_id] = (owner, expected)
        if ttl_ms := task.get("ttlMs"):
            self.expires[task_id] = self.clock() + ttl_ms / 1000
        return task_id

    def expired(self, task_id: str, margin_s: float = TTL_MARGIN_S) -> bool | None:
        """Whether the task's TTL has passed: None within `margin_s` of its end, where the
        server's clock and this one may disagree (either answer is right then)."""
        ends = self.expires.get(task_id)
        if ends is None:
            return False
        left = ends - self.clock()
        return None if abs(left) < margin_s else left < 0


def state_of(task: dict[str, Any]) -> str:
    """A task as the ledger compares it: its status, and a completed one's result label."""
    if task["status"] != "completed":
        return str(task["status"])
    return completed(task.get("result") or {})


class Progress:
    """A line on stderr every `every` seconds while a long phase runs."""

    def __init__(self, every: float = 10.0) -> None:
        self.every, self.began = every, time.monotonic()
        self.phase, self.done, self.total = "starting", 0, 0
        self._task: asyncio.Task[None] | None = None

    def set(self, phase: str, total: int) -> None:
        self.phase, self.done, self.total = phase, 0, total

    def __enter__(self) -> Progress:
        self._task = asyncio.get_running_loop().create_task(self._print())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _print(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            elapsed = time.monotonic() - self.began
            print(
                f"[bench {elapsed:7.0f} s] {self.phase}: {self.done:,} of {self.total:,}",
                file=sys.stderr,
                flush=True,
            )


async def per_client(
    clients: int, each: int, job: Job, progress: Progress | None = None
) -> list[float]:
    """`clients` concurrent clients, each making `each` calls one after another; the latency
    of every call (seconds)."""
    samples: list[float] = []

    async def one(client: int) -> None:
        for number in range(each):
            started = time.perf_counter()
            await job(client, number)
            samples.append(time.perf_counter() - started)
            if progress is not None:
                progress.done += 1

    await asyncio.gather(*(one(client) for client in range(clients)))
    return samples


async def side_by_side(
    rounds: int,
    server: Callable[[int], Awaitable[list[float]]],
    raw: Callable[[int], Awaitable[list[float]]],
) -> tuple[list[float], list[float]]:
    """`rounds` rounds of the server's and the floor's measurement, their order swapped every
    round, so that a change of the machine's load weighs on both alike."""
    ours: list[float] = []
    floor: list[float] = []
    for number in range(rounds):
        pair = [(server, ours), (raw, floor)]
        for measure, into in pair if number % 2 == 0 else reversed(pair):
            into.extend(await measure(number))
    return ours, floor


async def bounded(
    items: Iterable[Any],
    concurrency: int,
    job: Callable[[Any], Awaitable[None]],
    progress: Progress | None = None,
) -> None:
    """`job(item)` for every item, at most `concurrency` at once, items drawn as they go (a
    million items cost no more memory than their iterator)."""
    source = iter(items)

    async def runner() -> None:
        for item in source:
            await job(item)
            if progress is not None:
                progress.done += 1

    await asyncio.gather(*(runner() for _ in range(concurrency)))
