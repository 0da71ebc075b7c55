"""Answers of `/mcp` as server-sent events (Streamable HTTP, wire §1.8).

Each JSON-RPC message is one `event: message` whose `data` is the message on one line; a
comment (`: keep-alive`) goes out after `KEEPALIVE_S` without one, so proxies keep the stream
open. Three streams:
- a method that streams (`subscriptions/listen`): its messages as it yields them;
- a request whose method sends messages related to it before its result (progress, a task's
  questions at 2025-11-25): those messages as they come, then the response, which ends the
  stream. The client closing the stream stops the request, never a task;
- a 2025-11-25 session's GET stream: its tasks' questions (handshake.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from pydantic import BaseModel
from starlette.responses import StreamingResponse

from mcp_server.protocol.frame.errors import McpError
from mcp_server.protocol.frame.models import error_message, result_message, to_message

KEEPALIVE_S = 15.0
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
RequestId = str | int


def event(message: BaseModel | dict[str, Any] | None) -> bytes:
    """One message as an event; None: a keep-alive comment."""
    if message is None:
        return b": keep-alive\n\n"
    data = json.dumps(to_message(message), separators=(",", ":"), ensure_ascii=False)
    return f"event: message\ndata: {data}\n\n".encode()


def event_stream(events: AsyncIterable[bytes]) -> StreamingResponse:
    return StreamingResponse(events, media_type="text/event-stream", headers=SSE_HEADERS)


async def messages(stream: AsyncIterator[Any]) -> AsyncIterator[bytes]:
    """A streaming method's messages (its None: a keep-alive), the last one its response."""
    async for message in stream:
        yield event(message)


async def request_events(
    job: asyncio.Task[BaseModel],
    first: asyncio.Task[dict[str, Any]],
    queue: asyncio.Queue[dict[str, Any]],
    request_id: RequestId,
    server_info: dict[str, Any] | None,
) -> AsyncIterator[bytes]:
    """The messages `job` sends (`first`, then `queue`), then its response (`result_message`
    with `server_info`, or its error)."""
    try:
        if first.done():
            yield event(first.result())
        else:
            first.cancel()
        while True:
            getter = asyncio.create_task(queue.get())
            done, _ = await asyncio.wait(
                [job, getter], timeout=KEEPALIVE_S, return_when=asyncio.FIRST_COMPLETED
            )
            if getter in done:
                yield event(getter.result())
                continue
            getter.cancel()
            if job in done:
                break
            yield event(None)
        while not queue.empty():
            yield event(queue.get_nowait())
        try:
            response = result_message(job.result(), request_id, server_info)
        except McpError as error:
            response = to_message(error_message(error, request_id))
        yield event(response)
    finally:
        # The client closed the stream: stop serving the request (never the task).
        if not job.done():
            job.cancel()


async def session_events(
    questions: AsyncIterator[None], queue: asyncio.Queue[dict[str, Any]]
) -> AsyncIterator[bytes]:
    """A session's stream: what `questions` puts on `queue` as it wakes, and a keep-alive
    after `KEEPALIVE_S` without one."""
    quiet_since = time.monotonic()
    async for _ in questions:
        while not queue.empty():
            quiet_since = time.monotonic()
            yield event(queue.get_nowait())
        if time.monotonic() - quiet_since >= KEEPALIVE_S:
            quiet_since = time.monotonic()
            yield event(None)
