"""The attack on the public `/readyz`: a flood of probes, each costing Temporal two calls, and
a body that named the Temporal address (in an error's text, or the embedded engine's). Now one
check serves every probe for READY_CACHE_S (single-flight while it runs), and no address
reaches the body (mcp_server/observability/probes.py). A fake Temporal client counts calls."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from types import SimpleNamespace
from typing import Any, cast

from prometheus_client import REGISTRY
from temporalio.client import Client

from mcp_server.observability.probes import READY_CACHE_S, Readiness
from mcp_server.tasks.backend import TemporalBackend
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTES

ADDRESS = "10.20.30.40:7233"


class CountingTemporal:
    """What Readiness asks of a Temporal client, answering "all there" and counting calls;
    `down` makes the health check fail as gRPC does, naming the address."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.release = asyncio.Event()
        self.release.set()
        self.down = False
        self.namespace = "default"
        self.service_client = SimpleNamespace(check_health=self.check_health)
        self.operator_service = SimpleNamespace(list_search_attributes=self.attributes)
        self.workflow_service = SimpleNamespace(describe_task_queue=self.describe)

    async def check_health(self, **_: Any) -> None:
        self.calls["check_health"] += 1
        await self.release.wait()
        if self.down:
            raise RuntimeError(f"Failed client connect: Server connection error: {ADDRESS}")

    async def attributes(self, *_: Any, **__: Any) -> Any:
        self.calls["list_search_attributes"] += 1
        return SimpleNamespace(custom_attributes={name: 1 for name in SEARCH_ATTRIBUTES})

    async def describe(self, *_: Any, **__: Any) -> Any:
        self.calls["describe_task_queue"] += 1
        return SimpleNamespace(pollers=[])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def readiness(temporal: CountingTemporal, clock: Clock) -> Readiness:
    return Readiness(TemporalBackend(cast(Client, temporal)), clock=clock)


async def test_a_flood_of_probes_costs_temporal_one_check_per_interval() -> None:
    temporal, clock = CountingTemporal(), Clock()
    probe = readiness(temporal, clock)
    temporal.release.clear()  # the first check is slow: probes arriving meanwhile join it
    flood = [asyncio.create_task(probe.check()) for _ in range(50)]
    await asyncio.sleep(0)
    temporal.release.set()
    answers = await asyncio.gather(*flood)
    answers += [await probe.check() for _ in range(50)]  # within the interval: from the cache
    assert temporal.calls == {"check_health": 1, "list_search_attributes": 1}
    assert all(answer == answers[0] for answer in answers)
    clock.now += READY_CACHE_S
    await probe.check()
    # An interval later, checked again: one cheap RPC (the attributes, once seen, stay).
    assert temporal.calls == {"check_health": 2, "list_search_attributes": 1}


async def test_a_replica_whose_task_queue_has_no_worker_is_ready_to_serve() -> None:
    # Reads, answers and cancels work without a worker: readiness never asks for pollers (the
    # CountingTemporal lists none); the workers gauge and its alert report a missing worker.
    temporal = CountingTemporal()
    ready, body = await readiness(temporal, Clock()).check()
    assert ready and body == {
        "status": "ready",
        "missing": [],
        "temporal": "ok",
        "searchAttributes": "ok",
    }
    assert temporal.calls["describe_task_queue"] == 0
    assert REGISTRY.get_sample_value("mcp_tasks_ready") == 1
    temporal.down = True
    assert not (await readiness(temporal, Clock()).check())[0]
    assert REGISTRY.get_sample_value("mcp_tasks_ready") == 0  # what McpTasksNotReady reads


async def test_an_unreachable_temporal_is_not_named_in_the_public_body() -> None:
    temporal = CountingTemporal()
    temporal.down = True
    ready, body = await readiness(temporal, Clock()).check()
    assert not ready and body["missing"] == ["temporal"]
    assert body["temporal"].startswith("unreachable")
    assert "10.20.30.40" not in json.dumps(body)


async def test_the_embedded_engine_is_shown_without_its_address() -> None:
    outage = {
        "since": "2026-12-04T10:00:00Z",
        "reason": f"the Temporal dev server at {ADDRESS} was killed by signal 9",
    }
    status = {"state": "restarting", "address": ADDRESS, "restarts": 0, "outage": outage}
    probe = Readiness(TemporalBackend(cast(Client, CountingTemporal())), engine=lambda: status)
    ready, body = await probe.check()
    assert not ready and body["engine"]["state"] == "restarting"
    assert "killed by signal 9" in body["engine"]["outage"]["reason"]
    assert "10.20.30.40" not in json.dumps(body)
