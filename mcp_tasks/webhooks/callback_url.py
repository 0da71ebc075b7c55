"""What a client-supplied callback URL must look like (SEP-3415 webhook security), checked when
a client subscribes and again before every delivery (activities/callback_http.py).

Rules implemented:
- `https://` with a host, no user name or password, no fragment, at most `MAX_URL_CHARS`.
  (Whether its address may be called is decided at delivery time, after resolving it.)
- An address is callable when it is globally routable (Python's `ipaddress` `is_global`, the
  IANA special-purpose registries), and neither multicast nor unspecified; with the operator's
  `MCP_TASKS_EVENTS_ALLOW_PRIVATE_ADDRESSES`, any unicast address (loopback, private,
  link-local) is too. An IPv6 address that embeds an IPv4 address (mapped, compatible, SIIT,
  NAT64's 64:ff9b::/96 and 64:ff9b:1::/48, 6to4, Teredo) is callable only when every IPv4
  address it embeds is too; deprecated site-local fec0::/10 never is.
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


# Prefixes whose addresses carry an IPv4 address in their low 32 bits: NAT64 (RFC 6052's
# well-known prefix and RFC 8215's local-use one) and SIIT (RFC 6145/7915's translated form).
_LOW_32_PREFIXES = (
    ipaddress.IPv6Network("64:ff9b::/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("::ffff:0:0:0/96"),
)
# IPv4-compatible addresses (RFC 4291 §2.5.5.1, deprecated): the IPv4 address in the low 32 bits.
_COMPATIBLE = ipaddress.IPv6Network("::/96")
# Deprecated site-local addresses (RFC 3879): never callable, whatever Python says of them.
_SITE_LOCAL = ipaddress.IPv6Network("fec0::/10")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses `ip` embeds: mapped, compatible, SIIT, NAT64, 6to4, Teredo (both the
    server's and the client's, which Teredo stores inverted)."""
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if any(ip in prefix for prefix in _LOW_32_PREFIXES):
        found.append(low)
    if ip in _COMPATIBLE and int(ip) > 1:  # not :: nor ::1, which are themselves
        found.append(low)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def destination_of(url: str) -> str:
    """Where a callback URL's POSTs go, as handshake limits count them: `host:port`."""
    parts = urlsplit(url)
    return f"{(parts.hostname or '').lower()}:{parts.port or 443}"


def address_allowed(address: str, allow_private: bool) -> bool:
    """Whether a resolved address may be called: itself and every IPv4 address it embeds."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _SITE_LOCAL:
            return False
        embedded = embedded_ipv4(ip)
        if ip.ipv4_mapped is not None:
            candidates = []  # a mapped address is its IPv4 address, nothing else
        candidates.extend(embedded)
    for candidate in candidates:
        if candidate.is_multicast or candidate.is_unspecified:
            return False
        if not (allow_private or candidate.is_global):
            return False
    return True
