"""The attack: ten `GET /mcp` streams on one 2025-11-25 session, each looking for its tasks'
questions every second, held Temporal at a third of a core, and nothing limited how many a
caller could open. A session stream now takes a slot of the same pool as subscriptions/listen
(mcp_server/protocol/limits/listen.py): per caller and per replica, refused with QUOTA_EXCEEDED,
HTTP 429 and Retry-After, as a listen is."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from mcp_server.protocol.frame import errors
from tests.client_2025 import Client2025
from tests.conftest import Stack, StackFactory
from tests.protocol.test_listen_streams import listen_refusal


async def session(stack: Stack) -> Client2025:
    client = Client2025(stack.http, stack.url)
    await client.initialize()
    return client


@contextlib.asynccontextmanager
async def session_stream(stack: Stack, client: Client2025) -> AsyncIterator[httpx.Response]:
    """The session's GET stream, open (or refused) until the block ends."""
    headers = {**client.headers(), "Accept": "text/event-stream"}
    async with stack.http.stream("GET", stack.url, headers=headers, timeout=None) as response:
        yield response


async def refused_get(stack: Stack, client: Client2025) -> dict[str, Any]:
    async with asyncio.timeout(15), session_stream(stack, client) as response:
        assert response.status_code == 429 and response.headers["Retry-After"].isdigit()
        await response.aread()
        error: dict[str, Any] = response.json()["error"]
        return error


async def test_a_caller_may_not_hold_more_session_streams_than_listen_streams(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(max_listen_streams_per_principal=2) as stack:
        client = await session(stack)
        async with contextlib.AsyncExitStack() as held:
            for _ in range(2):
                opened = await held.enter_async_context(session_stream(stack, client))
                assert opened.status_code == 200
            refused = await refused_get(stack, client)
            assert refused["code"] == errors.QUOTA_EXCEEDED
            assert refused["data"] == {"openStreams": 2, "limit": 2}
            assert "per caller is 2" in refused["message"]
            # One pool: a listen stream is no way around it, nor the other way round.
            listen = await listen_refusal(stack.mcp, {"toolsListChanged": True})
            assert listen["code"] == errors.QUOTA_EXCEEDED
        # Closing the streams frees their slots (once the server has seen the client go).
        for _ in range(100):
            async with asyncio.timeout(15), session_stream(stack, client) as reopened:
                if reopened.status_code == 200:
                    break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the closed streams' slots were never freed")


async def test_a_replica_may_not_hold_more_session_streams_than_its_limit(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(max_listen_streams=1) as stack:
        first, second = await session(stack), await session(stack)
        async with session_stream(stack, first) as opened:
            assert opened.status_code == 200
            refused = await refused_get(stack, second)
            assert refused["code"] == errors.QUOTA_EXCEEDED
            assert refused["data"] == {"openStreams": 1, "limit": 1}
