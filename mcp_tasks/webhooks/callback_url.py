"""What a client-supplied callback URL must look like (SEP-3415 webhook security), checked when
a client subscribes and again before every delivery (activities/callback_http.py).

Rules implemented:
- `https://` with a host, no user name or password, no fragment, at most `MAX_URL_CHARS`.
  (Whether its address may be called is decided at delivery time, after resolving it.)
- An address is callable when it is globally routable (Python's `ipaddress` `is_global`, the
  IANA special-purpose registries), and neither multicast nor unspecified; with the operator's
  `MCP_TASKS_EVENTS_ALLOW_PRIVATE_ADDRESSES`, any unicast address (loopback, private,
  link-local) is too.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

MAX_URL_CHARS = 2048


def callback_url_problem(url: str) -> str | None:
    """Why `url` cannot be a callback URL, or None when it can."""
    if len(url) > MAX_URL_CHARS:
        return f"must be at most {MAX_URL_CHARS} characters"
    if any(c.isspace() or not c.isprintable() for c in url):
        return "must not contain whitespace or control characters"
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        return "is not a valid URL"
    if parts.scheme != "https" or not host:
        return "must be an https:// URL with a host"
    if parts.username is not None or parts.password is not None:
        return "must not carry a user name or password"
    if parts.fragment:
        return "must not have a fragment"
    return None


def address_allowed(address: str, allow_private: bool) -> bool:
    """Whether a resolved address may be called."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_multicast or ip.is_unspecified:
        return False
    return allow_private or ip.is_global
