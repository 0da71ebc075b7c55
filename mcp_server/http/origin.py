"""Host and Origin validation against DNS rebinding (wire reference §1.8).

A server bound to a loopback address accepts only loopback Host headers and, when an
Origin is sent, only loopback origins, unless more are configured. A server bound elsewhere
accepts any Host unless `allowed_hosts` is configured, and an Origin only when it is listed in
`allowed_origins` or is the same origin as the Host the client addressed. The public URL
(`MCP_TASKS_PUBLIC_URL`, behind a TLS proxy) adds its host to the allowed hosts and its
origin to the allowed origins, so a server bound to 0.0.0.0 answers its own name and 403s
every other Host.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp_tasks.hosts import is_loopback

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def _hostname(authority: str) -> str:
    """'127.0.0.1:8000' -> '127.0.0.1', '[::1]:80' -> '::1', 'Example.COM' -> 'example.com'."""
    parsed = urlsplit(f"//{authority}")
    return (parsed.hostname or "").lower()


def public_host_and_origin(public_url: str) -> tuple[str, str]:
    """'https://MCP.example.com/base' -> ('mcp.example.com', 'https://mcp.example.com')."""
    parsed = urlsplit(public_url)
    return (parsed.hostname or "").lower(), f"{parsed.scheme}://{parsed.netloc}".lower()


@dataclass(frozen=True)
class OriginPolicy:
    loopback_only: bool
    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: frozenset[str] = frozenset()

    def host_allowed(self, host_header: str | None) -> bool:
        if host_header is None:
            return not self.loopback_only
        name = _hostname(host_header)
        if name in self.allowed_hosts:
            return True
        if self.loopback_only:
            return is_loopback(name)
        return not self.allowed_hosts

    def origin_allowed(self, origin: str | None, host_header: str | None) -> bool:
        if origin is None:
            return True  # not a browser, or a same-origin request that omitted it
        if origin.rstrip("/") in self.allowed_origins:
            return True
        parsed = urlsplit(origin)
        name = (parsed.hostname or "").lower()
        if self.loopback_only:
            return is_loopback(name)
        return host_header is not None and parsed.netloc.lower() == host_header.lower()
