"""The FastAPI application: `/mcp`, the probes, the inbox, the codec, and the lifespan that
owns the process's single Temporal client. One middleware list, applied once to every route;
one route table."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import datetime

import uvicorn
from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from temporalio.client import Client

from mcp_server.auth.authenticators import RESOURCE_METADATA_PATH, TokenAuthentication
from mcp_server.auth.modes import build_authenticator
from mcp_server.auth.revocation import subscriptions_end_with_tokens
from mcp_server.http.endpoint import McpEndpoint, McpRoute
from mcp_server.http.middleware import (
    AuthenticationMiddleware,
    BodyLimitMiddleware,
    HostOriginMiddleware,
    ObservabilityMiddleware,
    RequestIdMiddleware,
)
from mcp_server.http.origin import LOOPBACK_NAMES, OriginPolicy, public_host_and_origin
from mcp_server.http.sessions import SessionIds
from mcp_server.http.timeouts import guarded_protocol
from mcp_server.inbox.routes import add_inbox_routes
from mcp_server.inbox.security import InboxHeadersMiddleware
from mcp_server.inbox.signin import inbox_signin
from mcp_server.observability.probes import EngineStatus
from mcp_server.observability.routes import add_operations_routes, operations
from mcp_server.protocol.services import build_services, clock, state_secret
from mcp_server.tasks.backend import TemporalBackend
from mcp_server.tasks.event_subscriptions import (
    SubscriptionStore,
    TemporalSubscriptionStore,
    events_offered,
)
from mcp_server.tasks.inbox_store import InboxStore, TemporalInboxStore
from mcp_server.tasks.store import TaskStore, TemporalTaskStore
from mcp_server.tasks.ui_links import workflow_url
from mcp_server.temporal.codec_server import CodecCorsMiddleware, add_codec_routes
from mcp_server.temporal.connection import connect
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks import __version__
from mcp_tasks.hosts import is_loopback
from mcp_tasks.logging import sample_reads, use_principal_key
from mcp_tasks.settings import Settings
from mcp_tasks.webhooks.endpoints import load_endpoints

log = logging.getLogger("mcp_server.http.app")


def origin_policy(settings: Settings) -> OriginPolicy:
    loopback = is_loopback(settings.host)
    hosts = set(settings.allowed_hosts)
    origins = set(settings.allowed_origins)
    if loopback:
        hosts |= LOOPBACK_NAMES
    if settings.public_url:
        public_host, public_origin = public_host_and_origin(settings.public_url)
        hosts.add(public_host)
        origins.add(public_origin)
    return OriginPolicy(
        loopback_only=loopback,
        allowed_hosts=frozenset(h.lower() for h in hosts),
        allowed_origins=frozenset(o.rstrip("/") for o in origins),
    )


MCP_PATH = "/mcp"


class McpShortcut:
    """The innermost middleware of the app's list: `/mcp` goes straight to its route's app,
    every other path on to FastAPI's exception handlers and router.

    Why: what FastAPI puts between the middleware and an endpoint (exception handlers, an exit
    stack, route matching, the request/response wrapper) serves routes that raise and take
    dependencies; `/mcp` answers every error itself, and polling clients hit it most. Through
    those layers, a `tasks/get` in process makes 857 Python calls instead of 784, and serves
    fewer requests per CPU second. The route stays in the app's table (`/mcp/` still
    redirects to it), and every middleware of the list applies to it, once.
    """

    def __init__(self, app: ASGIApp, route: Route) -> None:
        self.app = app
        self.route = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.route.path:
            await self.route.app(scope, receive, send)
            return
        await self.app(scope, receive, send)


@asynccontextmanager
async def _revocations(
    authenticator: object, subscriptions: SubscriptionStore | None
) -> AsyncIterator[None]:
    """Event subscriptions end with the token that made them (auth/revocation.py)."""
    if subscriptions is None or not isinstance(authenticator, TokenAuthentication):
        yield
        return
    async with subscriptions_end_with_tokens(authenticator, subscriptions):
        yield


def create_app(
    settings: Settings,
    registry: ToolRegistry,
    *,
    client: Client | None = None,
    store: TaskStore | None = None,
    inbox: InboxStore | None = None,
    local_client: Callable[[], Client | None] | None = None,
    engine: EngineStatus | None = None,
    now: Callable[[], datetime] = clock,
    monotonic: Callable[[], float] = time.monotonic,
) -> FastAPI:
    """Build the app. Without `store`, the lifespan connects to Temporal (or uses `client`).

    `inbox`: what the approval inbox reads beside `store` (by default read from Temporal, with
    the client; without a client and without `inbox`, the inbox answers 503).

    `now`: the clock of TTLs and timestamps (tests move it instead of waiting a TTL out);
    `monotonic`: the time of the rate limits (tests move it instead of waiting a refill out).

    `local_client`: the client of a worker of this process on the same task queue, if one
    runs now; creates then ask Temporal for an eager start (tasks/starts.py).

    `engine`: the state of the embedded Temporal this process supervises, for /readyz.

    Raises ValueError for a configuration that must not serve (e.g. no authentication on a
    public address), before anything starts.
    """
    authenticator = build_authenticator(settings, registry.scopes())
    secret = state_secret(settings)
    use_principal_key(secret)  # the key of the principals the logs show
    sample_reads(settings.log_reads_every)
    webhooks = load_endpoints(settings.webhooks_file, resolve_secrets=False)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task_store = store
        temporal = client
        if task_store is None:
            temporal = temporal or await connect(settings)
            task_store = TemporalTaskStore(
                temporal,
                settings.task_queue,
                now,
                settings.poll_interval_max_ms,
                local_client=local_client,
                quota_lazy_release=settings.quota_lazy_release,
                quota_wait_s=settings.quota_worker_wait_s,
                session_lists_per_principal=settings.session_lists_per_principal,
                followed_max=settings.max_followed_tasks,
                followed_max_bytes=settings.max_followed_mib * 1024 * 1024,
            )
        subscriptions = (
            TemporalSubscriptionStore(temporal, settings.task_queue)
            if temporal is not None and events_offered(settings)
            else None
        )
        services = build_services(
            settings,
            registry,
            task_store,
            secret,
            now,
            webhooks=webhooks,
            events=subscriptions,
            monotonic=monotonic,
        )
        app.state.endpoint = McpEndpoint(services, SessionIds(secret))
        app.state.services = services
        app.state.inbox = inbox or (TemporalInboxStore(temporal) if temporal else None)
        backend = TemporalBackend(temporal) if temporal is not None else None
        app.state.store = task_store
        async with (
            operations(app, settings, registry, backend, engine),
            _revocations(authenticator, subscriptions),
        ):
            yield
        if isinstance(task_store, TemporalTaskStore):
            await task_store.close()

    mcp = Route(MCP_PATH, McpRoute())  # every method: the endpoint answers each itself
    # No interactive docs: every route this app serves is behind the same middleware, and
    # an OpenAPI description of one JSON-RPC endpoint would only mislead.
    app = FastAPI(
        title="MCP tasks on Temporal",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        # The process traces and counts with its own providers (observability/), never
        # OpenTelemetry's global ones, which FastAPI's own telemetry would look up on every
        # request to find them unset.
        telemetry={"tracing": False, "metrics": False, "logs": False},
        routes=[mcp],
        # Outermost first: the request id wraps everything, then the inbox's headers (on
        # every /inbox response, refusals too), the codec's CORS (the Web UI's cross-origin
        # calls, checked before the Origin policy refuses them), then Host/Origin, auth and
        # the body limit. The inbox's headers and the codec's CORS act on their paths only.
        middleware=[
            Middleware(RequestIdMiddleware),
            Middleware(InboxHeadersMiddleware),
            Middleware(CodecCorsMiddleware, settings=settings),
            Middleware(ObservabilityMiddleware),
            Middleware(HostOriginMiddleware, policy=origin_policy(settings)),
            Middleware(AuthenticationMiddleware, authenticator=authenticator),
            Middleware(BodyLimitMiddleware, limit=settings.max_body_bytes),
            Middleware(McpShortcut, route=mcp),
        ],
    )
    # Set when the HTTP server begins to shut down (HttpServer.shutdown): long-lived inbox
    # event streams end then.
    app.state.closing = asyncio.Event()

    async def resource_metadata(request: Request) -> Response:
        metadata = authenticator.resource_metadata()
        if metadata is None:
            return JSONResponse({"error": "this server does not use OAuth"}, status_code=404)
        return JSONResponse(metadata)

    add_operations_routes(app)
    add_codec_routes(app, settings)

    def web_ui(task_id: str) -> str | None:
        return workflow_url(settings.temporal_ui_url, settings.namespace, task_id)

    add_inbox_routes(app, inbox_signin(settings, authenticator, secret), web_ui)
    # RFC 9728: at the root, and suffixed with the resource's path.
    app.add_route(RESOURCE_METADATA_PATH, resource_metadata, methods=["GET"])
    app.add_route(f"{RESOURCE_METADATA_PATH}/mcp", resource_metadata, methods=["GET"])
    return app


def http_config(app: FastAPI, settings: Settings) -> uvicorn.Config:
    """uvicorn's configuration: this app on the settings' address, with a time limit on
    reading each request and on idle keep-alive connections (timeouts.py)."""
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        lifespan="on",
        http=guarded_protocol(settings.http_request_timeout_s, parser=settings.http_parser),
        timeout_keep_alive=settings.http_keep_alive_s,  # type: ignore[arg-type]
        # SIGTERM: stop accepting, let requests in flight finish, close what is left after the
        # grace (a listen stream may last an hour) so the process exits in bounded time.
        timeout_graceful_shutdown=settings.http_shutdown_grace_s,  # type: ignore[arg-type]
        # uvicorn's lines go through the process's log format (one JSON line each with
        # MCP_TASKS_LOG_FORMAT=json) instead of uvicorn's own handlers.
        log_config=None,
    )


class HttpServer(uvicorn.Server):
    """uvicorn without its own signal handling: the embedding program decides when to stop.
    `on_started` runs once it listens (the CLI's "up on ..." line)."""

    def __init__(
        self, config: uvicorn.Config, on_started: Callable[[], None] | None = None
    ) -> None:
        super().__init__(config)
        self.on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.on_started is not None:
            self.on_started()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    @asynccontextmanager
    async def running(self, start_within_s: float = 10.0) -> AsyncIterator[None]:
        """This server serving in the current event loop for the block, from started to
        stopped (an embedded server: the tests' stacks, the benchmarks). RuntimeError when it
        has not started within `start_within_s` (a port taken, say)."""
        serving = asyncio.create_task(self.serve())
        deadline = asyncio.get_running_loop().time() + start_within_s
        while not self.started:  # uvicorn has no event for it
            if serving.done() or asyncio.get_running_loop().time() > deadline:
                self.should_exit = True
                await serving
                raise RuntimeError("uvicorn did not start")
            await asyncio.sleep(0.02)
        try:
            yield
        finally:
            self.should_exit = True
            await serving

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # The inbox's event streams end at once (the browser reconnects elsewhere or later)
        # instead of holding the shutdown until its grace has passed.
        closing = getattr(getattr(self.config.app, "state", None), "closing", None)
        if isinstance(closing, asyncio.Event):
            closing.set()
        await super().shutdown(sockets)
