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
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

# Their side has sent a whole request, or will send no more on this connection.
_READ = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with a time limit on reading each request."""

    request_timeout_s = 20.0
    _read_deadline: asyncio.TimerHandle | None = None

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


def guarded_h11(request_timeout_s: float) -> type[GuardedH11Protocol]:
    """The protocol class uvicorn should use (`uvicorn.Config(http=...)`)."""
    return type(
        "GuardedH11Protocol", (GuardedH11Protocol,), {"request_timeout_s": request_timeout_s}
    )
