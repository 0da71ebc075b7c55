"""`mcp-tasks`: `dev` (everything in one command), `server` and `worker` (each part alone)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import secrets
import signal
import sys
from datetime import timedelta
from pathlib import Path

import uvicorn
from temporalio.client import Client

from mcp_server.http.app import HttpServer, create_app
from mcp_server.http.auth import build_authenticator, token_hash
from mcp_server.runtime.config import Settings
from mcp_server.runtime.devserver import TemporalDevServer, port_is_free
from mcp_server.runtime.temporal_connection import (
    connect,
    ensure_search_attributes,
    set_retention,
    warn_if_retention_short,
)
from mcp_server.runtime.worker import build_worker
from mcp_server.tools.registry import ToolRegistry, load_toolsets

log = logging.getLogger("mcp_server.runtime.cli")


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


def _http_server(settings: Settings, registry: ToolRegistry, client: Client) -> HttpServer:
    app = create_app(settings, registry, client=client)
    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, log_level="warning", lifespan="on"
    )
    return HttpServer(config)


async def _serve(
    settings: Settings, registry: ToolRegistry, client: Client, *, http: bool, worker: bool
) -> None:
    """Run the HTTP server and/or the worker until SIGINT/SIGTERM or until one of them fails."""
    stop = _stop_event()
    jobs: dict[str, asyncio.Task[None]] = {}
    server = _http_server(settings, registry, client) if http else None
    temporal_worker = build_worker(client, settings, registry) if worker else None
    if temporal_worker is not None:
        jobs["worker"] = asyncio.create_task(temporal_worker.run())
    if server is not None:
        jobs["http"] = asyncio.create_task(server.serve())
    waiter = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait([waiter, *jobs.values()], return_when=asyncio.FIRST_COMPLETED)
    failed = [name for name, job in jobs.items() if job in done]
    # Stop taking requests first, then let the worker finish what it holds.
    if server is not None:
        server.should_exit = True
    if temporal_worker is not None and "worker" not in failed:
        await temporal_worker.shutdown()
    await asyncio.gather(*jobs.values(), return_exceptions=True)
    waiter.cancel()
    for name in failed:
        error = jobs[name].exception()
        if error is not None:
            raise RuntimeError(f"the {name} stopped: {error}") from error
        if name == "http" and not stop.is_set():
            raise RuntimeError(f"the HTTP server could not run on {settings.host}:{settings.port}")


def _state_secret(data_dir: Path) -> str:
    path = data_dir / "state-secret"
    if path.exists():
        return path.read_text().strip()
    secret = secrets.token_hex(32)
    path.write_text(secret)
    path.chmod(0o600)
    return secret


async def run_dev(args: argparse.Namespace, settings: Settings) -> None:
    build_authenticator(settings)  # a configuration that must not serve stops here
    registry = load_toolsets(settings.toolset, settings.tool_modules, settings)
    if not port_is_free(settings.host, settings.port):
        raise SystemExit(f"mcp-tasks: port {settings.host}:{settings.port} is already in use")
    data_dir = Path(os.path.abspath(args.data_dir))
    temporal = TemporalDevServer(
        data_dir, port=args.temporal_port, ui=args.ui, ui_port=args.ui_port,
        namespace=settings.namespace,
    )  # fmt: skip
    temporal.start()
    try:
        await temporal.wait_ready()
        settings = settings.with_(
            temporal_address=temporal.address,
            state_secret=settings.state_secret or _state_secret(data_dir),
        )
        client = await connect(settings)
        longest = registry.longest_ttl_ms()
        await set_retention(client, timedelta(milliseconds=longest or 3_600_000))
        ui_port = args.ui_port or int(temporal.port or 0) + 1000
        ui = f"http://{temporal.host}:{ui_port}" if args.ui else "off"
        print(
            f"mcp-tasks dev: MCP endpoint http://{settings.host}:{settings.port}/mcp\n"
            f"  toolset {settings.toolset} ({len(registry.tools())} tools); "
            f"Temporal {temporal.address} (namespace {settings.namespace}, "
            f"task queue {settings.task_queue}); Web UI {ui}\n"
            f"  data in {data_dir}; Ctrl-C stops everything",
            flush=True,
        )
        await _serve(settings, registry, client, http=True, worker=True)
    finally:
        temporal.stop()


async def run_part(settings: Settings, *, http: bool, worker: bool) -> None:
    if http:
        build_authenticator(settings)
    registry = load_toolsets(settings.toolset, settings.tool_modules, settings)
    client = await connect(settings)
    await ensure_search_attributes(client)
    await warn_if_retention_short(client, registry.longest_ttl_ms())
    await _serve(settings, registry, client, http=http, worker=worker)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-tasks", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--toolset", choices=["demo", "conformance"], default=None)
    common.add_argument("--tools", nargs="*", default=None, metavar="MODULE",
                        help="modules with register(registry) adding your own tools")  # fmt: skip
    http = argparse.ArgumentParser(add_help=False)
    http.add_argument("--host", default=None)
    http.add_argument("--port", type=int, default=None)
    http.add_argument("--auth", choices=["none", "tokens", "jwt"], default=None)
    http.add_argument(
        "--insecure",
        action="store_true",
        default=None,
        help="allow --auth none on a non-loopback address (taskIds become bearer secrets)",
    )

    dev = commands.add_parser(
        "dev", parents=[common, http], help="Temporal dev server + worker + HTTP server in one"
    )
    dev.add_argument("--data-dir", default=".mcp-tasks")
    dev.add_argument("--temporal-port", type=int, default=None)
    dev.add_argument("--ui", action="store_true", help="also serve Temporal's Web UI")
    dev.add_argument("--ui-port", type=int, default=None)
    commands.add_parser("server", parents=[common, http], help="the MCP HTTP server alone")
    commands.add_parser("worker", parents=[common], help="the Temporal worker alone")
    token = commands.add_parser("token", help="manage the bearer tokens of --auth tokens")
    token_commands = token.add_subparsers(dest="token_command", required=True)
    add = token_commands.add_parser("add", help="mint a token, store its hash, print it once")
    add.add_argument("--file", required=True, help="the tokens file (created if missing)")
    add.add_argument("--principal", required=True)
    add.add_argument("--scope", action="append", default=[], dest="scopes")
    return parser


def add_token(path: Path, principal: str, scopes: list[str]) -> str:
    """Mint a bearer token for `principal`; the file keeps only its SHA-256."""
    document = json.loads(path.read_text()) if path.exists() else {"tokens": []}
    token = secrets.token_urlsafe(32)
    document["tokens"].append(
        {"sha256": token_hash(token), "principal": principal, "scopes": sorted(scopes)}
    )
    path.write_text(json.dumps(document, indent=2) + "\n")
    path.chmod(0o600)
    return token


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("MCP_TASKS_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command == "token":
        token = add_token(Path(args.file), args.principal, args.scopes)
        print(f"token for {args.principal} (shown once; {args.file} keeps only its hash):")
        print(token)
        return
    try:
        settings = Settings.from_env(
            host=getattr(args, "host", None),
            port=getattr(args, "port", None),
            auth=getattr(args, "auth", None),
            insecure=getattr(args, "insecure", None),
            toolset=args.toolset,
            tool_modules=tuple(args.tools) if args.tools else None,
        )
        if args.command == "dev":
            asyncio.run(run_dev(args, settings))
        else:
            asyncio.run(
                run_part(settings, http=args.command == "server", worker=args.command == "worker")
            )
    except (RuntimeError, OSError, ValueError) as err:
        print(f"mcp-tasks: {err}", file=sys.stderr, flush=True)
        code = 1
    else:
        code = 0
    # The Temporal SDK's Rust threads can crash a finalizing interpreter (sdk-python #300);
    # leave without finalizing once everything has been stopped.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
