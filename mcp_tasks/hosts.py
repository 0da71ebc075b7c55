"""Whether a host is this machine: the bind address's check (`--auth none` and the state
secret are safe only on loopback) and the Host/Origin check against DNS rebinding."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """`localhost`, a `*.localhost` name or a loopback address (IPv4 or IPv6, brackets or not)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
