"""The operator's routes and what the lifespan runs for them (docs/operations/observability.md):

- `GET /healthz`: liveness, no Temporal call (public, like the OAuth metadata).
- `GET /readyz`: readiness, 200 or 503 with a JSON body naming what is missing (public).
- `GET /metrics`: Prometheus text, behind the same Host/Origin and authentication as `/mcp`
  (scrape with a token), or on `MCP_TASKS_METRICS_PORT` without authentication.
- the background refresh of the open-task gauges and of `mcp_tasks_ready`
  (observability/visibility.py), started by the first scrape of either /metrics (the main
  port's or MCP_TASKS_METRICS_PORT's): a server nobody scrapes asks Temporal nothing for
  them, and a server scraped on either port has them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcp_server.observability import metrics as metric_defs
from mcp_server.observability.probes import EngineStatus, Readiness, liveness
from mcp_server.observability.visibility import OpenTaskGauges
from mcp_server.tasks.backend import TaskBackend
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings


@contextlib.asynccontextmanager
async def operations(
    app: FastAPI,
    settings: Settings,
    registry: ToolRegistry,
    backend: TaskBackend | None,
    engine: EngineStatus | None = None,
) -> AsyncIterator[None]:
    app.state.readiness = app.state.gauges = None
    if backend is None:  # a store without Temporal (tests of the app alone): no probes to run
        yield
        return
    readiness = Readiness(backend, settings.ready_cache_s, engine=engine)
    app.state.readiness = readiness
    tools = sorted(t.name for t in registry.tools() if t.task_support != "never")
    gauges = OpenTaskGauges(backend, tools, settings, readiness=readiness)
    app.state.gauges = gauges
    ui_url = (settings.temporal_ui_url or "").rstrip("/")
    metric_defs.DEPLOYMENT.labels(backend.namespace, settings.task_queue, ui_url).set(1)
    hook = metric_defs.ScrapeHook(asyncio.get_running_loop(), gauges.start)
    REGISTRY.register(hook)
    try:
        yield
    finally:
        REGISTRY.unregister(hook)
        await gauges.stop()


async def healthz(request: Request) -> Response:
    return JSONResponse(liveness())


async def readyz(request: Request) -> Response:
    readiness: Readiness | None = request.app.state.readiness
    if readiness is None:
        body = {"status": "not ready", "missing": ["temporal"], "temporal": "not connected"}
        return JSONResponse(body, status_code=503)
    ready, body = await readiness.check()
    return JSONResponse(body, status_code=200 if ready else 503)


async def metrics(request: Request) -> Response:
    # The first collection starts the background refresh (ScrapeHook); this scrape answers
    # with what the gauges hold now.
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


def add_operations_routes(app: FastAPI) -> None:
    app.add_route("/healthz", healthz, methods=["GET"])
    app.add_route("/readyz", readyz, methods=["GET"])
    app.add_route("/metrics", metrics, methods=["GET"])
