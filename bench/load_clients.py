"""The load of `make load` (bench/load.py): its clients (`LoadClient`, a 429 or 503 retried
after its Retry-After), one task's life as a client lives it (`one_task`), N tasks over M
clients (`run_load`), and the peak RSS of the processes under load (`sample_peaks`). The other
benchmarks reuse the clients."""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from bench.raw_http import RawHttp
from bench.run import META, cpu_seconds, percentiles, rss_mib

TOOL = "multi_step_job"
TERMINAL = {"completed", "failed", "cancelled"}


@dataclass
class Stats:
    statuses: Counter[int] = field(default_factory=Counter)
    rate_limited: Counter[str] = field(default_factory=Counter)
    unavailable: Counter[str] = field(default_factory=Counter)
    unavailable_reasons: Counter[str] = field(default_factory=Counter)  # "method: message"
    transport_errors: int = 0
    latencies: dict[str, list[float]] = field(default_factory=dict)
    in_flight: int = 0
    peak_in_flight: int = 0
    lost: list[str] = field(default_factory=list)
    not_created: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)


class PostResponse(Protocol):
    """What LoadClient reads of a response (httpx's, or bench/raw_http.py's)."""

    @property
    def status_code(self) -> int: ...
    @property
    def text(self) -> str: ...
    def json(self) -> Any: ...


class Poster(Protocol):
    """What LoadClient needs of an HTTP client: a JSON POST."""

    async def post(self, url: str, *, json: Any, headers: dict[str, str]) -> PostResponse: ...
    async def aclose(self) -> None: ...


class LoadClient:
    """One client: with tokens, its own principal; its own connection pool, or `http` shared
    with other clients (then closing it is the caller's business)."""

    def __init__(
        self, url: str, token: str | None, stats: Stats, http: Poster | None = None
    ) -> None:
        self.auth = {"Authorization": f"Bearer {token}"} if token else {}
        self.http: Poster = http or httpx.AsyncClient(timeout=60)
        self.url, self.stats = url, stats
        self.creating = asyncio.Lock()  # a client creates its tasks one after another

    async def rpc(self, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
        """The result. A 429 or a 503 is counted and retried after its Retry-After (a 503 of
        tools/call started nothing). A transport error or another 5xx is counted and retried
        after a second, except for tools/call, whose outcome it leaves unknown. Any other error
        is raised."""
        headers = {
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
            "Mcp-Name": name,
            **self.auth,
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
        while True:
            started = time.perf_counter()
            try:
                response = await self.http.post(self.url, json=body, headers=headers)
            except httpx.TransportError as err:
                self.stats.transport_errors += 1
                if method == "tools/call":
                    raise RuntimeError(f"{method}: {err!r}: outcome unknown") from err
                await asyncio.sleep(1)
                continue
            self.stats.latencies.setdefault(method, []).append(time.perf_counter() - started)
            status = response.status_code
            self.stats.statuses[status] += 1
            retry_ms = _retry_after_ms(response) if status in (429, 503) else None
            if retry_ms is not None:
                (self.stats.rate_limited if status == 429 else self.stats.unavailable)[method] += 1
                if status == 503:
                    reason = response.json()["error"].get("message", "")
                    self.stats.unavailable_reasons[f"{method}: {reason[:160]}"] += 1
                await asyncio.sleep(retry_ms / 1000)
                continue
            if status >= 500 and method != "tools/call":
                # Reads and answers are safe to repeat: the client tries again a second later.
                self.stats.server_errors.append(f"{method} {name}: HTTP {status}: {response.text}")
                await asyncio.sleep(1)
                continue
            if status >= 500:
                raise RuntimeError(f"{method}: HTTP {status}: {response.text}")
            payload = response.json()
            if "error" in payload:
                raise RuntimeError(f"{method}: {payload['error']}")
            return dict(payload["result"])


def _retry_after_ms(response: PostResponse) -> float | None:
    try:
        return float(response.json()["error"]["data"]["retryAfterMs"])
    except (ValueError, KeyError, TypeError):
        return None


def expected(task: dict[str, Any], name: str) -> bool:
    result = task.get("result") or {}
    content = result.get("structuredContent") or {}
    return (
        task["status"] == "completed"
        and result.get("isError") is False
        and content.get("name") == name
        and content.get("approved") is True
        and len(content.get("steps", [])) == 1
    )


@dataclass
class Plan:
    answer_after: int
    step_seconds: float
    deadline: float
    tasks: int
    created: asyncio.Event = field(default_factory=asyncio.Event)
    started: int = 0
    all_started: asyncio.Event = field(default_factory=asyncio.Event)


async def one_task(client: LoadClient, name: str, plan: Plan) -> None:
    """Create the task, poll it at its pollIntervalMs from then on, answer it (once every task
    exists) after `plan.answer_after` polls that show its question, poll it to its end and
    check it."""
    arguments = {
        "name": name,
        "steps": 1,
        "step_seconds": plan.step_seconds,
        "require_approval": True,
    }
    stats = client.stats
    async with client.creating:
        try:
            started = await client.rpc("tools/call", {"name": TOOL, "arguments": arguments}, TOOL)
        except RuntimeError as err:
            stats.not_created.append(f"{name}: {err}")
            return
    task_id = started["taskId"]
    stats.in_flight += 1
    stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
    plan.started += 1
    if plan.started == plan.tasks:
        plan.all_started.set()
    waiting_polls, task = 0, started
    try:
        # Polled from its creation on, as a real client does (not all at once when the last
        # task exists); answered only once every task exists.
        while time.monotonic() < plan.deadline:
            await asyncio.sleep(task["pollIntervalMs"] / 1000)
            task = await client.rpc("tasks/get", {"taskId": task_id}, task_id)
            if task["status"] in TERMINAL:
                break
            if task["status"] == "input_required" and "approve" in task["inputRequests"]:
                waiting_polls += 1
                if waiting_polls >= plan.answer_after and plan.created.is_set():
                    answer = {"approve": {"action": "accept", "content": {"approve": True}}}
                    params = {"taskId": task_id, "inputResponses": answer}
                    await client.rpc("tasks/update", params, task_id)
    finally:
        stats.in_flight -= 1
    if not expected(task, name):
        stats.lost.append(f"{task_id} ({name}): {task.get('status')}")


def http_client(kind: str) -> Poster:
    """One client's HTTP client: bench/raw_http.py (lean; its docstring says why), or httpx."""
    if kind == "httpx":
        return httpx.AsyncClient(timeout=60)
    return RawHttp(limit=16)


async def run_load(
    url: str,
    tokens: list[str | None],
    tasks: int,
    answer_after: int = 2,
    step_seconds: float = 1.0,
    timeout_s: float = 1800,
    http: str = "raw",
) -> dict[str, Any]:
    """`tasks` tasks spread over one client per entry of `tokens`, each client on its own
    connections (`http`: see http_client); the figures."""
    stats = Stats()
    clients = [LoadClient(url, token, stats, http_client(http)) for token in tokens]
    plan = Plan(answer_after, step_seconds, time.monotonic() + timeout_s, tasks)
    began = time.perf_counter()
    cpu_before = time.process_time()
    load_before = os.getloadavg()[0]
    running = [
        asyncio.ensure_future(one_task(clients[i % len(clients)], f"load-{i}", plan))
        for i in range(tasks)
    ]
    # Until every task exists, or one could not be created.
    waiter = asyncio.ensure_future(plan.all_started.wait())
    await asyncio.wait([waiter, *running], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    all_created_s = time.perf_counter() - began
    plan.created.set()
    outcomes = await asyncio.gather(*running, return_exceptions=True)
    errors = [repr(outcome) for outcome in outcomes if isinstance(outcome, BaseException)]
    for client in clients:
        await client.http.aclose()
    return {
        "tasks": tasks,
        "clients": len(clients),
        "tool": f"{TOOL} (require_approval, 1 step of {step_seconds} s)",
        "http_client": http,
        "answer_after_polls": answer_after,
        # Created (acknowledged with a taskId) and not ended as expected: must be 0.
        "lost": len(stats.lost) + len(errors),
        "lost_detail": (stats.lost + errors)[:10],
        # tools/call answered with an error other than a retried 429/503: nothing acknowledged.
        "not_created": len(stats.not_created),
        "not_created_detail": stats.not_created[:10],
        "http_statuses": {str(code): n for code, n in sorted(stats.statuses.items())},
        "http_5xx": sum(n for code, n in stats.statuses.items() if code >= 500),
        "http_5xx_other_detail": stats.server_errors[:10],
        "rate_limited_429": dict(stats.rate_limited),
        "unavailable_503_retried": dict(stats.unavailable),
        "unavailable_503_reasons": dict(stats.unavailable_reasons.most_common(10)),
        "transport_errors": stats.transport_errors,
        "peak_in_flight": stats.peak_in_flight,
        "all_created_after_s": round(all_created_s, 1),
        "tasks_get": percentiles(stats.latencies.get("tasks/get", [0.0])),
        "tools_call": percentiles(stats.latencies.get("tools/call", [0.0])),
        "tasks_update": percentiles(stats.latencies.get("tasks/update", [0.0])),
        "wall_s": round(time.perf_counter() - began, 1),
        # The clients' own process: its CPU is taken from the same 2 cores as the server's.
        "load_clients_cpu_s": round(time.process_time() - cpu_before, 1),
        "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
        "cpus": os.cpu_count(),
    }


async def sample_peaks(
    pids: dict[str, int],
    peaks: dict[str, float],
    every: float = 0.5,
    cpu: dict[str, float] | None = None,
) -> None:
    """The highest RSS (MiB) of each process, sampled from /proc every `every` seconds; with
    `cpu`, also the CPU seconds each has used since the first sample."""
    first: dict[str, float] = {}
    while True:
        for name, pid in pids.items():
            try:
                peaks[name] = max(peaks.get(name, 0.0), round(rss_mib(pid), 1))
                if cpu is not None:
                    used = cpu_seconds(pid)
                    cpu[name] = round(used - first.setdefault(name, used), 1)
            except OSError:
                pass
        await asyncio.sleep(every)
