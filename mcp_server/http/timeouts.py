"""Connection time limits of the HTTP server (against slowloris and idle connection hoarding).

- Reading a request: from the moment a connection opens, or the previous response on it is
  complete, the whole request (head and body) must arrive within `request_timeout_s`, else the
  connection is closed. uvicorn has no such limit: its keep-alive timer is cancelled by the
  first byte, so a client that sends half a request (or nothing at all on a new connection)
  held the connection forever. Once a request is fully read the limit no longer applies: a
  long response (an SSE stream, a tool call that waits) is not cut.
- Idle keep-alive: uvicorn's `timeout_keep_alive` closes a connection on which nothing arrives
  for `keep_alive_s` after a response.
Behind a reverse proxy, let the proxy enforce its own limits on clients (nginx:
`client_header_timeout`, `client_body_timeout`, `keepalive_timeout`) and keep its idle time on
upstream connections shorter than `keep_alive_s`, so it never reuses one this server closes.

The server parses HTTP with httptools (C, llhttp) where it is installed, as it is with this
project's dependencies, and with h11 (pure Python) otherwise; both protocols carry the same
limit. h11's parsing and serialising was about a fifth of the process's samples in a
`tasks/get` (py-spy over sequential reads).
"""

from __future__ import annotations

import asyncio
import importlib.util

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

# Their side has sent a whole request, or will send no more on this connection.
_READ = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)


class _ReadDeadline:
    """The timer: armed while a request is awaited or being read, disarmed once it is read."""

    request_timeout_s = 20.0
    _read_deadline: asyncio.TimerHandle | None = None
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def _arm(self) -> None:
        self._disarm()
        self._read_deadline = self.loop.call_later(self.request_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _too_slow(self) -> None:
        self._read_deadline = None
        if not self.transport.is_closing():
            self.transport.close()


class GuardedH11Protocol(_ReadDeadline, H11Protocol):
    """uvicorn's h11 protocol, with a time limit on reading each request."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in _READ:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # A pipelined request already read in full needs no timer.
        if not self.transport.is_closing() and self.conn.their_state not in _READ:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def _httptools_protocol() -> type[asyncio.Protocol] | None:
    if importlib.util.find_spec("httptools") is None:
        return None
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GuardedHttpToolsProtocol(_ReadDeadline, HttpToolsProtocol):
        """uvicorn's httptools protocol, with a time limit on reading each request."""

        # Between the first byte of a request and its last (httptools' message callbacks).
        _mid_request = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._mid_request = True

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._mid_request = False
            self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # `cycle` is the newest request parsed: a pipelined request already read in full
            # (its response not yet complete) needs no timer; one still arriving, or none, does.
            latest = self.cycle
            waiting = self._mid_request or latest is None or latest.response_complete
            if not self.transport.is_closing() and waiting:
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return GuardedHttpToolsProtocol


GUARDED_HTTPTOOLS = _httptools_protocol()


def guarded_protocol(request_timeout_s: float, *, parser: str = "auto") -> type[asyncio.Protocol]:
    """The protocol class uvicorn should use (`uvicorn.Config(http=...)`): httptools when
    `parser` is "auto" and it is installed, or "httptools"; h11 for "h11" or without it."""
    base: type[asyncio.Protocol] = GuardedH11Protocol
    if parser == "httptools" and GUARDED_HTTPTOOLS is None:
        raise ValueError("httptools is not installed (pip install httptools)")
    if parser in ("auto", "httptools") and GUARDED_HTTPTOOLS is not None:
        base = GUARDED_HTTPTOOLS
    return type(base.__name__, (base,), {"request_timeout_s": request_timeout_s})
