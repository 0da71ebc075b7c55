"""A lean HTTP/1.1 client for the benchmarks: JSON POSTs over keep-alive connections, and
nothing else.

Why not httpx: the benchmark client shares the machine's two cores with the server it
measures, and httpx spends more CPU per request than the server's whole ASGI stack (profiled
with pyinstrument: about as much again as the server's own handling of a tasks/get, part of it
an import attempt per request in httpcore's async-library detection). The floor's client, the
Rust core of `temporalio`, costs a fraction of that; a lean client keeps the comparison about
the server. It speaks only what the server answers a JSON POST with: a status line, headers,
a Content-Length body (a JSON response; never a stream).

It stands in for `httpx.AsyncClient.post` where `bench/load_clients.py`'s LoadClient uses it, and a
broken connection is an `httpx.TransportError`, as LoadClient expects.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx


@dataclass
class RawResponse:
    status_code: int
    headers: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class RawHttp:
    """POSTs to one origin; at most `limit` connections, each reused while it stays open."""

    def __init__(self, limit: int = 64, timeout_s: float = 60.0) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._slots = asyncio.Semaphore(limit)
        self._timeout_s = timeout_s

    async def post(
        self, url: str, *, json: Any, headers: dict[str, str] | None = None
    ) -> RawResponse:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        body = _dumps(json)
        head = [
            f"POST {parts.path or '/'} HTTP/1.1",
            f"Host: {host}:{port}",
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
            f"Content-Length: {len(body)}",
        ]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        async with self._slots:
            try:
                async with asyncio.timeout(self._timeout_s):
                    return await self._exchange((host, port), request)
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as err:
                raise httpx.ConnectError(f"{type(err).__name__}: {err}") from err

    async def _exchange(self, origin: tuple[str, int], request: bytes) -> RawResponse:
        idle = self._idle.setdefault(origin, [])
        reused = bool(idle)
        reader, writer = idle.pop() if idle else await asyncio.open_connection(*origin)
        try:
            writer.write(request)
            await writer.drain()
            response, keep = await _read_response(reader)
        except (OSError, asyncio.IncompleteReadError):
            writer.close()
            if not reused:
                raise
            # The server closed an idle connection meanwhile (its keep-alive timeout): again on
            # a new one. Safe: nothing of this request was read by anyone.
            return await self._exchange(origin, request)
        if keep:
            idle.append((reader, writer))
        else:
            writer.close()
        return response

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for _, writer in connections:
                writer.close()
        self._idle.clear()


async def _read_response(reader: asyncio.StreamReader) -> tuple[RawResponse, bool]:
    status_line = await reader.readuntil(b"\r\n")
    if not status_line:
        raise asyncio.IncompleteReadError(b"", None)
    status = int(status_line.split(b" ", 2)[1])
    headers: dict[str, str] = {}
    while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" not in headers:
        raise ValueError("the benchmark client reads only Content-Length bodies")
    content = await reader.readexactly(int(headers["content-length"]))
    return RawResponse(status, headers, content), headers.get("connection") != "close"


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
