"""The polling phase of `make bench`: what hosts that poll cost the team's Temporal, counted by
Temporal itself, with the replica following the tasks it is asked about (the default) and
without (MCP_TASKS_MAX_FOLLOWED_TASKS=0: every tasks/get a `describe()`), in the same run.

For each setting, a stack of three processes (bench/unit_costs.py: a Temporal dev server with
its Prometheus metrics on, `mcp-tasks worker`, `mcp-tasks server`, the demo toolset) parks
`clients` x `tasks_per_client` approvals (`request_approval`), then every client polls each of
its tasks with tasks/get, sleeping the pollIntervalMs of the last answer, as a host does, out
of step with the others (first polls spread over one interval): for `WARM_UP_S` (a host polls
from its task's creation), then for `seconds`, the window measured.
Measured: tasks/get made and their p50/p99; Temporal's frontend requests in that window by
operation (its own `service_requests` counter): DescribeWorkflowExecution per
tasks/get, and PollWorkflowExecutionHistory (the long-polls that follow the tasks).

Then, with the tasks followed, how soon a change made elsewhere reaches tasks/get: an answer
signalled straight to Temporal (as another replica's tasks/update would), then tasks/get every
5 ms until it no longer lists the answered question; from the signal's return to that answer.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.load_clients import LoadClient, Stats
from bench.run import percentiles
from bench.unit_costs import counters, stack
from mcp_tasks.contracts.task_state import SUBMIT_INPUT_SIGNAL, SubmitInput

APPROVE = {"action": "accept", "content": {"decision": "approve"}}
DESCRIBE = "frontend:DescribeWorkflowExecution"
# Temporal counts a history read that waits for new events under its own operation.
HISTORY = "frontend:PollWorkflowExecutionHistory"
SPREAD_S = 5.0  # request_approval's pollIntervalMs
WARM_UP_S = 6.0  # a little longer: every host has polled once before the window opens


def _p50_p99(samples: list[float]) -> list[float]:
    figures = percentiles(samples)
    return [figures["p50_ms"], figures["p99_ms"]]


async def _poll(
    client: LoadClient,
    task_id: str,
    first: float,
    since: float,
    until: float,
    latencies: list[float],
) -> None:
    """Poll from `first` until `until`, at the task's pollIntervalMs; the latency of each poll
    made from `since` on goes into `latencies`."""
    await asyncio.sleep(max(0.0, first - time.perf_counter()))
    while True:
        started = time.perf_counter()
        task = await client.rpc("tasks/get", {"taskId": task_id}, task_id)
        if started >= since:
            latencies.append(time.perf_counter() - started)
        pause = task.get("pollIntervalMs", 1000) / 1000
        if time.perf_counter() + pause >= until:
            return
        await asyncio.sleep(pause)


async def _read(client: LoadClient, task_id: str) -> dict[str, Any]:
    return await client.rpc("tasks/get", {"taskId": task_id}, task_id)


async def _seen_after(client: LoadClient, temporal: Any, task_id: str) -> float:
    """Seconds from an answer signalled straight to Temporal to tasks/get showing it."""
    key = next(iter((await _read(client, task_id))["inputRequests"]))
    answer = SubmitInput({key: APPROVE}, by="another replica")
    await temporal.get_workflow_handle(task_id).signal(SUBMIT_INPUT_SIGNAL, answer)
    signalled = time.perf_counter()
    async with asyncio.timeout(30):
        while True:
            if key not in (await _read(client, task_id)).get("inputRequests", {}):
                return time.perf_counter() - signalled
            await asyncio.sleep(0.005)


async def _park(client: LoadClient, count: int) -> list[str]:
    """`count` approvals at their question, each read until then (a host's first polls)."""
    ids = []
    for i in range(count):
        arguments = {"name": "request_approval", "arguments": {"message": f"Approve {i}?"}}
        created = await client.rpc("tools/call", arguments, "request_approval")
        ids.append((created.get("task") or created)["taskId"])
    for task_id in ids:
        async with asyncio.timeout(60):
            while True:
                if (await _read(client, task_id))["status"] == "input_required":
                    break
                await asyncio.sleep(0.1)
    return ids


def _frontend(totals: dict[str, int]) -> int:
    return sum(v for k, v in totals.items() if k.startswith("frontend:"))


async def _one_setting(
    followed: int, clients: int, per_client: int, seconds: float, changes: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-polling-") as scratch:
        extra = {"MCP_TASKS_MAX_FOLLOWED_TASKS": str(followed)}
        async with stack(Path(scratch), extra) as running, httpx.AsyncClient(timeout=60) as http:
            client = LoadClient(running.url, running.token, Stats(), http)
            ids = await _park(client, clients * per_client)
            # The hosts have been polling since their tasks were created: the window opens
            # once each has polled (the replica's first reads of a task are describes either
            # way), and measures the polls that follow.
            # Hosts poll out of step with each other: their first polls are spread evenly over
            # one interval (`SPREAD_S`), and each keeps its own pace from there.
            now = time.perf_counter()
            began = now + WARM_UP_S
            until = began + seconds
            latencies: list[float] = []
            polls = [
                _poll(client, task_id, now + SPREAD_S * i / len(ids), began, until, latencies)
                for i, task_id in enumerate(ids)
            ]
            polling = asyncio.gather(*polls)
            await asyncio.sleep(max(0.0, began - time.perf_counter()))
            before = await counters(http, running.metrics)
            await polling
            elapsed = time.perf_counter() - began
            after = await counters(http, running.metrics)
            gets = len(latencies)
            describes = after[DESCRIBE] - before[DESCRIBE]
            frontend = _frontend(after) - _frontend(before)
            stats = client.stats
            figures: dict[str, Any] = {
                "followed tasks (MCP_TASKS_MAX_FOLLOWED_TASKS)": followed,
                "tasks/get": gets,
                "seconds": round(elapsed, 1),
                "tasks/get p50/p99 ms": _p50_p99(latencies),
                "describes": describes,
                "describes per tasks/get": round(describes / max(1, gets), 3),
                "history long-polls": after[HISTORY] - before[HISTORY],
                "frontend requests per tasks/get": round(frontend / max(1, gets), 3),
                "frontend requests by operation": {
                    k.split(":", 1)[1]: after[k] - before[k]
                    for k in after
                    if k.startswith("frontend:") and after[k] != before[k]
                },
                "retried (429, 503)": [
                    sum(stats.rate_limited.values()),
                    sum(stats.unavailable.values()),
                ],
            }
            if followed and changes:
                seen = [await _seen_after(client, running.client, i) for i in ids[:changes]]
                figures["a change made elsewhere seen by tasks/get p50/p99 ms"] = _p50_p99(seen)
            return figures


async def polling(
    clients: int = 20, per_client: int = 10, seconds: float = 40.0, changes: int = 40
) -> dict[str, Any]:
    """Both settings, the replica that follows first."""
    return {
        "clients": clients,
        "tasks per client": per_client,
        "following": await _one_setting(2000, clients, per_client, seconds, changes),
        "not following": await _one_setting(0, clients, per_client, seconds, 0),
    }
