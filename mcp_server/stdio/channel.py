"""Newline-delimited JSON-RPC on the process's stdin and stdout (the MCP stdio transport).

- One message per line, UTF-8; a serialised message never holds a raw newline (JSON escapes
  them). Blank lines are skipped.
- Nothing but protocol messages on stdout: `claim_stdio` takes private copies of stdin and
  stdout for the protocol, then points fd 1 at stderr and fd 0 at /dev/null, so print(), the
  Temporal SDK's Rust core, and every child process (the Temporal dev server, a tool's shell)
  write to stderr and can never read the host's messages.
- A line longer than the limit is skipped whole and reported (`lines` yields None for it).
- Lines are read and written by daemon threads: a blocked read or write never stalls the event
  loop (the Temporal worker runs in it too), and never holds up the process's exit.
- Writes keep the order of `send` calls: concurrent requests never interleave their lines.
  When the host has closed its end, messages are dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO

log = logging.getLogger("mcp_server.stdio.channel")

_EOF = b""


def claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The protocol's own (reader, writer); fd 0 becomes /dev/null and fd 1 stderr."""
    sys.stdout.flush()
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return reader, writer


class StdioChannel:
    def __init__(self, reader: BinaryIO, writer: BinaryIO, max_line_bytes: int) -> None:
        self._reader = reader
        self._writer = writer
        self._max = max_line_bytes
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._broken = threading.Event()
        self._writing = threading.Thread(target=self._write_lines, name="stdio-out", daemon=True)
        self._writing.start()

    async def lines(self) -> AsyncIterator[bytes | None]:
        """Each line read (None for one too long to read), until stdin ends."""
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[bytes | None] = asyncio.Queue()

        def deliver(line: bytes | None) -> bool:
            try:
                loop.call_soon_threadsafe(inbox.put_nowait, line)
            except RuntimeError:  # the loop is closed: the process is leaving
                return False
            return True

        threading.Thread(
            target=self._read_lines, args=(deliver,), name="stdio-in", daemon=True
        ).start()
        while True:
            line = await inbox.get()
            if line == _EOF:
                return
            if line is None or line.strip():
                yield line

    def _read_lines(self, deliver: Callable[[bytes | None], bool]) -> None:
        try:
            while True:
                line: bytes | None = self._reader.readline(self._max + 1)
                if line is not None and len(line) > self._max and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):  # skip the rest of it
                        line = self._reader.readline(self._max)
                    line = None
                if not deliver(line) or line == _EOF:
                    return
        except (OSError, ValueError) as err:
            log.warning("stdin failed: %s", err)
            deliver(_EOF)

    async def send(self, message: dict[str, Any]) -> None:
        """Queue one message for stdout (in order; returns at once)."""
        if self._broken.is_set():
            return
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        self._outbox.put(data.encode() + b"\n")

    def _write_lines(self) -> None:
        try:
            while (data := self._outbox.get()) is not None:
                self._writer.write(data)
                if self._outbox.empty():
                    self._writer.flush()
            self._writer.flush()
        except (OSError, ValueError) as err:  # the host closed its end
            self._broken.set()
            log.warning("stdout is closed; messages still to send are dropped: %s", err)

    async def close(self, timeout_s: float = 5.0) -> None:
        """Write what is queued (for at most `timeout_s`), then stop writing."""
        self._outbox.put(None)
        await asyncio.to_thread(self._writing.join, timeout_s)
