"""`mcp-tasks`: `dev` (everything in one command), `stdio` (for hosts that spawn their servers),
`server` and `worker` (each part alone), `setup` (an existing Temporal namespace made ready for
them), `tasks` (operators: list, show and answer tasks), `token` (the bearer tokens of
--auth tokens)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, BinaryIO

from temporalio.client import Client
from temporalio.worker import Worker

from mcp_server.auth.modes import build_authenticator
from mcp_server.http.app import HttpServer, create_app, http_config
from mcp_server.observability import tracing
from mcp_server.observability.metrics import serve_metrics
from mcp_server.protocol.services import state_secret
from mcp_server.runtime import event_loop, operator_cli
from mcp_server.runtime.data_dir import state_secret_of
from mcp_server.runtime.devserver import TemporalDevServer, port_is_free
from mcp_server.runtime.operator_views import clean
from mcp_server.runtime.setup_command import run_setup
from mcp_server.runtime.supervisor import EngineSupervisor, SupervisedWorker, claim_data_dir
from mcp_server.runtime.tokens import add_token, list_tokens, revoke_tokens
from mcp_server.runtime.worker import build_worker, missing_directories, sweeping_expired_tasks
from mcp_server.stdio.channel import claim_stdio
from mcp_server.stdio.server import StdioServer
from mcp_server.temporal.connection import connect, set_retention
from mcp_server.temporal.setup import register_missing, require_ready
from mcp_server.tools.loading import load_toolsets
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.logging import LogFormat
from mcp_tasks.logging import configure as configure_logging
from mcp_tasks.settings import Settings
from mcp_tasks.webhooks.endpoints import load_endpoints

log = logging.getLogger("mcp_server.runtime.cli")

# What `mcp-tasks --help` says (the module docstring above is for readers of the code).
DESCRIPTION = (
    "Durable MCP tool calls on Temporal. dev: Temporal dev server, worker and MCP endpoint in "
    "one command; stdio: for hosts that spawn their servers; server and worker: each part "
    "alone, on an existing Temporal; setup: make a namespace ready for them; tasks: list, show "
    "and answer tasks as an operator; token: the bearer tokens of --auth tokens. Settings: "
    "MCP_TASKS_* variables (docs: Settings)."
)


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


@dataclass
class Part:
    """One thing the process runs until it is told to stop: the HTTP server, stdio, a worker."""

    name: str
    run: Callable[[], Coroutine[Any, Any, None]]
    # How to stop it gracefully; None: cancel it.
    stop: Callable[[], Awaitable[None]] | None = None
    # Said when it ends by itself while nothing asked it to; None: its end ends the process.
    ends_unexpectedly: str | None = None


def _http_part(
    settings: Settings,
    registry: ToolRegistry,
    client: Client,
    local_client: Callable[[], Client | None] | None = None,
    engine: EngineSupervisor | None = None,
    on_started: Callable[[], None] | None = None,
) -> Part:
    app = create_app(
        settings,
        registry,
        client=client,
        local_client=local_client,
        engine=engine.status if engine is not None else None,
    )
    server = HttpServer(http_config(app, settings), on_started)
    if settings.metrics_port is not None:
        serve_metrics(settings.metrics_host, settings.metrics_port)

    async def stop() -> None:
        server.should_exit = True

    return Part(
        "HTTP server",
        server.serve,
        stop,
        f"the HTTP server could not run on {settings.host}:{settings.port}",
    )


def _supervised(settings: Settings, registry: ToolRegistry) -> SupervisedWorker:
    """Next to an embedded Temporal: a worker that fails is started again."""

    async def build() -> Worker:  # on a client of its own (see SupervisedWorker)
        return build_worker(await connect(settings), settings, registry)

    return SupervisedWorker(build)


def _worker_part(
    settings: Settings,
    registry: ToolRegistry,
    client: Client,
    *,
    supervised: SupervisedWorker | None = None,
) -> Part:
    for line in missing_directories(registry):
        log.warning("%s", line)
    if supervised is not None:
        work, stop = supervised.run, supervised.shutdown
    else:
        worker = build_worker(client, settings, registry)
        work, stop = worker.run, worker.shutdown

    async def run() -> None:  # every worker process sweeps the expired tasks of its queue
        async with sweeping_expired_tasks(client, settings, registry):
            await work()

    return Part("worker", run, stop)


def _engine_part(engine: EngineSupervisor) -> Part:
    """The supervisor that restarts the embedded Temporal; /readyz shows what it sees."""
    return Part("Temporal dev server", engine.run)


async def _serve(parts: list[Part]) -> None:
    """Run the parts until SIGINT/SIGTERM or until one of them ends, then stop all of them in
    order (the front first: stop taking requests, then let the worker finish what it holds)."""
    stop = _stop_event()
    jobs = {part.name: asyncio.create_task(part.run()) for part in parts}
    waiter = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait([waiter, *jobs.values()], return_when=asyncio.FIRST_COMPLETED)
    ended = [part for part in parts if jobs[part.name] in done]
    for part in parts:
        job = jobs[part.name]
        if job.done():
            continue
        if part.stop is None:
            job.cancel()
        else:
            await part.stop()
    await asyncio.gather(*jobs.values(), return_exceptions=True)
    waiter.cancel()
    for part in ended:
        error = jobs[part.name].exception()
        if error is not None:
            raise RuntimeError(f"the {part.name} stopped: {error}") from error
        if part.ends_unexpectedly is not None and not stop.is_set():
            raise RuntimeError(part.ends_unexpectedly)


async def _dev_temporal(
    args: argparse.Namespace, settings: Settings
) -> tuple[TemporalDevServer, Settings, Client]:
    """The embedded Temporal of the data dir (joined when one runs there, else started)."""
    data_dir = Path(os.path.abspath(args.data_dir))
    temporal = TemporalDevServer(
        data_dir,
        port=args.temporal_port,
        ui=getattr(args, "ui", False),
        ui_port=getattr(args, "ui_port", None),
        namespace=settings.namespace,
        synchronous=settings.sqlite_synchronous,
    )
    await temporal.start_or_join()
    try:
        settings = settings.with_(
            temporal_address=temporal.address,
            state_secret=settings.state_secret or state_secret_of(data_dir),
        )
        client = await connect(settings)
        await register_missing(client)  # dev registers them itself (a joined older server)
        return temporal, settings, client
    except BaseException:
        temporal.stop()
        raise


def _temporal_line(temporal: TemporalDevServer) -> str:
    joined = temporal.joined
    whose = f"joined, started by pid {joined.pid}" if joined else "started"
    ui_port = temporal.ui_port or int(temporal.port or 0) + 1000
    ui = f"http://{temporal.host}:{ui_port}" if temporal.ui else "off"
    return f"Temporal {temporal.address} ({whose}); Web UI {ui}"


async def run_dev(args: argparse.Namespace, settings: Settings) -> None:
    build_authenticator(settings)  # a configuration that must not serve stops here
    load_endpoints(settings.webhooks_file, resolve_secrets=True)  # (the worker's, too)
    registry = load_toolsets(settings.toolset, settings.tool_modules, settings)
    endpoint = f"http://{settings.host}:{settings.port}/mcp"
    claim_data_dir(Path(os.path.abspath(args.data_dir)), endpoint)  # one `dev` per data dir
    if not port_is_free(settings.host, settings.port):
        raise SystemExit(f"mcp-tasks: port {settings.host}:{settings.port} is already in use")
    temporal, settings, client = await _dev_temporal(args, settings)
    try:
        longest = registry.longest_ttl_ms()
        await set_retention(client, timedelta(milliseconds=longest or 3_600_000))
        print(
            f"mcp-tasks dev: MCP endpoint http://{settings.host}:{settings.port}/mcp\n"
            f"  toolset {settings.toolset} ({len(registry.tools())} tools); "
            f"{_temporal_line(temporal)} (namespace {settings.namespace}, "
            f"task queue {settings.task_queue})\n"
            f"  data in {temporal.data_dir}; Ctrl-C stops everything",
            flush=True,
        )
        worker = _supervised(settings, registry)
        engine = EngineSupervisor(temporal)
        await _serve(
            [
                # Creates start on the worker's own client, which may hand a new task's first
                # workflow task straight to it (eager workflow start, tasks/starts.py).
                _http_part(
                    settings,
                    registry,
                    client,
                    local_client=worker.local_client if settings.eager_start else None,
                    engine=engine,
                ),
                _worker_part(settings, registry, client, supervised=worker),
                _engine_part(engine),
            ]
        )
    finally:
        temporal.stop()


async def run_part(settings: Settings, *, http: bool, worker: bool) -> None:
    if http:  # a configuration that must not serve stops here, before Temporal is called
        build_authenticator(settings)
        state_secret(settings)
    load_endpoints(settings.webhooks_file, resolve_secrets=worker)
    registry = load_toolsets(settings.toolset, settings.tool_modules, settings)
    client = await connect(settings)
    await require_ready(client, registry.longest_ttl_ms())  # only `mcp-tasks setup` registers
    where = (
        f"toolset {settings.toolset} ({len(registry.tools())} tools); Temporal "
        f"{settings.temporal_address} (namespace {settings.namespace}, task queue "
        f"{settings.task_queue})"
    )
    parts = []
    if http:
        endpoint = f"http://{settings.host}:{settings.port}/mcp"
        say = _say(f"mcp-tasks server: up on {endpoint}; {where}")
        parts.append(_http_part(settings, registry, client, on_started=say))
    if worker:
        parts.append(_worker_part(settings, registry, client))
        print(f"mcp-tasks worker: up, polling; {where}", flush=True)
    await _serve(parts)


def _say(line: str) -> Callable[[], None]:
    return lambda: print(line, flush=True)


async def run_stdio(
    args: argparse.Namespace, settings: Settings, reader: BinaryIO, writer: BinaryIO
) -> None:
    """One host on stdin/stdout; logs and anything else on stderr."""
    # A supervised worker would retry a bad webhooks file for ever: it stops here.
    load_endpoints(settings.webhooks_file, resolve_secrets=args.worker)
    registry = load_toolsets(settings.toolset, settings.tool_modules, settings)
    temporal: TemporalDevServer | None = None
    if args.dev:
        temporal, settings, client = await _dev_temporal(args, settings)
    else:
        client = await connect(settings)
    try:
        if temporal is not None:
            longest = registry.longest_ttl_ms()
            await set_retention(client, timedelta(milliseconds=longest or 3_600_000))
        else:
            await require_ready(client, registry.longest_ttl_ms())
        where = _temporal_line(temporal) if temporal else f"Temporal {settings.temporal_address}"
        log.info(
            "mcp-tasks stdio: toolset %s (%d tools); %s (namespace %s, task queue %s%s)",
            settings.toolset,
            len(registry.tools()),
            where,
            settings.namespace,
            settings.task_queue,
            "" if args.worker else ", no worker",
        )
        server = StdioServer(settings, registry, client, reader, writer)
        parts = [Part("stdio transport", server.serve)]
        if args.worker:
            supervised = _supervised(settings, registry) if args.dev else None
            parts.append(_worker_part(settings, registry, client, supervised=supervised))
        if temporal is not None:
            parts.append(_engine_part(EngineSupervisor(temporal)))
        await _serve(parts)
    finally:
        if temporal is not None:
            temporal.stop()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-tasks", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--toolset",
        choices=["demo", "conformance"],
        default=None,
        help="the built-in tools to serve (default: demo; MCP_TASKS_TOOLSET)",
    )
    common.add_argument(
        "--tools",
        nargs="*",
        default=None,
        metavar="MODULE",
        help="modules with register(registry) adding your own tools",
    )
    http = argparse.ArgumentParser(add_help=False)
    http.add_argument(
        "--host", default=None, help="the address to listen on (default: 127.0.0.1; MCP_TASKS_HOST)"
    )
    http.add_argument(
        "--port",
        type=int,
        default=None,
        help="the port of the MCP endpoint and the inbox (default: 8000; MCP_TASKS_PORT)",
    )
    http.add_argument(
        "--auth",
        choices=["none", "tokens", "jwt"],
        default=None,
        help="how callers authenticate: none (loopback only), tokens (a tokens "
        "file, see `mcp-tasks token`) or jwt (default: none; MCP_TASKS_AUTH)",
    )
    http.add_argument(
        "--insecure",
        action="store_true",
        default=None,
        help="allow --auth none on a non-loopback address (taskIds become bearer secrets); "
        "needs MCP_TASKS_ALLOWED_HOSTS there",
    )

    dev = commands.add_parser(
        "dev", parents=[common, http], help="Temporal dev server + worker + HTTP server in one"
    )
    dev.add_argument(
        "--data-dir",
        default=".mcp-tasks",
        help="where the embedded Temporal keeps its data (default: .mcp-tasks)",
    )
    dev.add_argument(
        "--temporal-port",
        type=int,
        default=None,
        help="the embedded Temporal's port (default: 7233, or a free port when 7233 is taken)",
    )
    dev.add_argument("--ui", action="store_true", help="also serve Temporal's Web UI")
    dev.add_argument(
        "--ui-port",
        type=int,
        default=None,
        help="the Web UI's port, with --ui (default: Temporal's port + 1000)",
    )
    stdio = commands.add_parser(
        "stdio", parents=[common], help="serve one MCP host that spawns this server (stdin/stdout)"
    )
    stdio.add_argument(
        "--dev",
        action="store_true",
        help="use the embedded Temporal dev server of --data-dir (join it, or "
        "start it); without it, MCP_TASKS_TEMPORAL_ADDRESS",
    )
    stdio.add_argument(
        "--data-dir",
        default=".mcp-tasks",
        help="where the embedded Temporal of --dev keeps its data (default: .mcp-tasks)",
    )
    stdio.add_argument(
        "--temporal-port", type=int, default=None, help="the embedded Temporal's port, with --dev"
    )
    stdio.add_argument(
        "--no-worker",
        dest="worker",
        action="store_false",
        help="serve only: the tasks run on workers elsewhere",
    )
    commands.add_parser("server", parents=[common, http], help="the MCP HTTP server alone")
    commands.add_parser("worker", parents=[common], help="the Temporal worker alone")
    commands.add_parser(
        "setup",
        parents=[common],
        help="check an existing Temporal namespace (exists, retention) and register the search "
        "attributes the server and worker need; prints what it changed",
        description="With the settings of server and worker (MCP_TASKS_TEMPORAL_ADDRESS, "
        "_NAMESPACE, TLS, API key): check that the namespace exists, report its retention "
        "against the tools' longest TTL (a warning when shorter; never changed), register the "
        "missing search attributes, and print each change or 'nothing to change'. Idempotent. "
        "Exit codes: 0 ready; 1 bad settings or another error; 3 Temporal unreachable; 4 no "
        "such namespace; 5 permission denied.",
    )
    token = commands.add_parser("token", help="manage the bearer tokens of --auth tokens")
    token_commands = token.add_subparsers(dest="token_command", required=True)
    add = token_commands.add_parser("add", help="mint a token, store its hash, print it once")
    add.add_argument("--file", required=True, help="the tokens file (created if missing)")
    add.add_argument(
        "--principal",
        required=True,
        help="who the token stands for (its name in logs, approvals, the inbox)",
    )
    add.add_argument(
        "--scope",
        action="append",
        default=[],
        dest="scopes",
        help="a scope the token holds (repeat it, or separate scopes with spaces "
        "or commas), e.g. --scope deploy for the demo's deploy tool",
    )
    listing = token_commands.add_parser("list", help="each token's id, principal and scopes")
    listing.add_argument("--file", required=True, help="the tokens file")
    revoke = token_commands.add_parser(
        "revoke", help="remove a token (by id) or all of a principal's; ends their sessions"
    )
    revoke.add_argument("--file", required=True, help="the tokens file")
    revoke.add_argument("token_id", nargs="?", default=None, help="an id from token list")
    revoke.add_argument("--principal", default=None, help="revoke every token of this principal")
    operator_cli.add_parser(commands)
    return parser


def observe_logs(settings: Settings, default: LogFormat) -> None:
    """The log format of this command (MCP_TASKS_LOG_FORMAT wins), once settings are valid."""
    level = os.environ.get("MCP_TASKS_LOG_LEVEL", "INFO")
    configure_logging(settings.log_format or default, level)


def _token_command(args: argparse.Namespace) -> None:
    """`token add | list | revoke` (ValueError: what is wrong, one line)."""
    path = Path(args.file)
    if args.token_command == "list":
        for entry in list_tokens(path):
            scopes = clean(" ".join(entry.scopes)) or "(none)"
            print(f"{entry.token_id}  {clean(entry.principal)}  {scopes}")
        return
    if args.token_command == "revoke":
        for entry in revoke_tokens(path, args.token_id, args.principal):
            print(
                f"revoked {entry.token_id} of {clean(entry.principal)}: its inbox sessions end "
                "now; its event subscriptions when a running server next reads the file "
                "(within seconds)"
            )
        return
    token = add_token(path, args.principal, args.scopes)
    held = json.loads(path.read_text())["tokens"][-1]["scopes"]
    print(
        f"token for {args.principal}, scopes: {' '.join(held) or '(none)'} (shown once; "
        f"{args.file} keeps only its hash):"
    )
    print(token)


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "stdio":
        # Before anything can print: stdout carries protocol messages and nothing else.
        reader, writer = claim_stdio()
    logging.basicConfig(
        level=os.environ.get("MCP_TASKS_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command == "token":
        try:
            _token_command(args)
        except ValueError as err:
            raise SystemExit(f"mcp-tasks: {err}") from None
        return
    if args.command == "tasks":
        _leave(operator_cli.run(args))
    try:
        settings = Settings.from_env(
            host=getattr(args, "host", None),
            port=getattr(args, "port", None),
            auth=getattr(args, "auth", None),
            insecure=getattr(args, "insecure", None),
            toolset=args.toolset,
            tool_modules=tuple(args.tools) if args.tools else None,
        )
        interactive = args.command in ("dev", "stdio", "setup")
        observe_logs(settings, default="text" if interactive else "json")
        tracing.configure(settings.otlp_endpoint, f"mcp-tasks-{args.command}")
        loop = settings.event_loop
        code = 0
        if args.command == "dev":
            event_loop.run(run_dev(args, settings), loop)
        elif args.command == "stdio":
            event_loop.run(run_stdio(args, settings, reader, writer), loop)
        elif args.command == "setup":
            code = event_loop.run(run_setup(settings), loop)
        else:
            serving = run_part(
                settings, http=args.command == "server", worker=args.command == "worker"
            )
            event_loop.run(serving, loop)
    except (RuntimeError, OSError, ValueError) as err:
        print(f"mcp-tasks: {err}", file=sys.stderr, flush=True)
        code = getattr(err, "exit_code", 1)  # a ClusterProblem says which (temporal/setup.py)
    tracing.shutdown()  # the spans still batched, before leaving without finalizing
    _leave(code)


def _leave(code: int) -> None:
    # The Temporal SDK's Rust threads can crash a finalizing interpreter (sdk-python #300);
    # leave without finalizing once everything has been stopped.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
