"""The ports the dev command and the tests pick come from below the kernel's ephemeral range,
where no outgoing connection of another process can take them between the pick and the bind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from mcp_server.runtime import engine_process
from mcp_server.runtime.engine_process import free_port


def test_a_free_port_is_below_the_ephemeral_range_and_can_be_bound() -> None:
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(20):
        port = free_port()
        assert 10_000 <= port < ephemeral_low
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind(("127.0.0.1", port))


def test_without_a_free_port_below_the_range_the_kernel_picks_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine_process, "port_is_free", lambda host, port: False)
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", port))
