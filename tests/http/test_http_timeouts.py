"""Slowloris: a connection that sends half a request, or nothing, or idles after a response, is
closed by the server (the server the `mcp-tasks server` command runs: http_config). A real
uvicorn on a real socket, since the socket is what is tested; the app on the in-memory store,
since no task is."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mcp_server.http.app import HttpServer, create_app, http_config
from mcp_server.runtime.devserver import free_port
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings
from tests.fakes.memory_store import MemoryTaskStore

# Short limits for the test; every wait for a close is bounded well above them.
REQUEST_TIMEOUT_S = 0.5
KEEP_ALIVE_S = 0.5
CLOSED_WITHIN_S = 10.0
# Node's undici drops a pooled connection idle this long (its keepAliveTimeout default).
UNDICI_KEEP_ALIVE_S = 4.0


@pytest.fixture(params=["httptools", "h11"])
async def port(request: pytest.FixtureRequest, registry: ToolRegistry) -> AsyncIterator[int]:
    settings = Settings(
        port=free_port(),
        http_request_timeout_s=REQUEST_TIMEOUT_S,
        http_keep_alive_s=KEEP_ALIVE_S,
        http_parser=request.param,
        state_secret="s" * 32,
    )
    config = http_config(create_app(settings, registry, store=MemoryTaskStore()), settings)
    parsers = {"httptools": HttpToolsProtocol, "h11": H11Protocol}
    assert isinstance(config.http, type) and issubclass(config.http, parsers[request.param])
    async with served(config):
        yield settings.port


@contextlib.asynccontextmanager
async def served(config: uvicorn.Config) -> AsyncIterator[None]:
    """The server `mcp-tasks server` runs (http_config), from started to stopped."""
    async with HttpServer(config).running():
        yield


async def closed_by_server(reader: asyncio.StreamReader, within: float = CLOSED_WITHIN_S) -> bytes:
    """Everything the server still sends before it closes the connection (bounded wait)."""
    return await asyncio.wait_for(reader.read(), within)


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # a connection that never sends anything
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl",  # half a head
        # A whole head, then only part of the body it announced.
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"jsonrpc":',
    ],
)
async def test_a_half_sent_request_is_closed(port: int, sent: bytes) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(sent)
    await writer.drain()
    await closed_by_server(reader)
    writer.close()


async def test_trickling_bytes_does_not_keep_a_request_open(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 1000
    closed = asyncio.create_task(closed_by_server(reader))
    for byte in head:  # one byte every 50 ms: each resets no timer
        if closed.done():
            break
        writer.write(bytes([byte]))
        await asyncio.sleep(0.05)
    await closed
    writer.close()


async def test_an_idle_keep_alive_connection_is_closed(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await writer.drain()
    # Within less than uvicorn's own default (5 s): the configured keep-alive applies.
    response = await closed_by_server(reader, within=4.0)
    assert response.startswith(b"HTTP/1.1 200 ") or response.startswith(b"HTTP/1.1 503 ")
    writer.close()


async def test_a_half_sent_request_after_a_served_one_is_closed(port: int) -> None:
    # The limit starts again once the first response is complete: the second request, of which
    # only half the head ever comes, does not hold the connection.
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nHo")
    await writer.drain()
    response = await closed_by_server(reader)
    assert response.count(b"HTTP/1.1 ") == 1
    writer.close()


async def test_pipelined_requests_are_all_answered(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 3)
    await writer.drain()
    response = await closed_by_server(reader)  # then idle: closed by the keep-alive limit
    assert response.count(b"HTTP/1.1 ") == 3
    writer.close()


def test_the_default_keep_alive_outlives_the_idle_pools_of_common_clients(
    registry: ToolRegistry,
) -> None:
    """httpx drops an idle pooled connection after 5 s, Node's undici after 4 s. A server that
    closed idle connections at 5 s raced httpx: a client reusing one at 4.99 s got a
    ReadError. The default keep-alive, the one uvicorn is given, is past both."""
    settings = Settings(state_secret="s" * 32)
    config = http_config(create_app(settings, registry, store=MemoryTaskStore()), settings)
    assert config.timeout_keep_alive == settings.http_keep_alive_s
    httpx_pool_s = httpx.Limits().keepalive_expiry
    assert httpx_pool_s is not None
    assert settings.http_keep_alive_s > max(httpx_pool_s, UNDICI_KEEP_ALIVE_S)


async def test_a_connection_idle_for_less_than_the_keep_alive_still_answers(
    registry: ToolRegistry,
) -> None:
    """The other side of `test_an_idle_keep_alive_connection_is_closed`: the keep-alive is
    what closes, not the idling itself (scaled down: idle 1 s under a keep-alive of 4 s)."""
    settings = Settings(port=free_port(), http_keep_alive_s=4.0, state_secret="s" * 32)
    async with served(
        http_config(create_app(settings, registry, store=MemoryTaskStore()), settings)
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", settings.port)
        request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        for _ in range(2):
            writer.write(request)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert head.startswith((b"HTTP/1.1 200 ", b"HTTP/1.1 503 ")), head
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            await asyncio.sleep(1.0)
        assert not reader.at_eof()
        writer.close()
