"""The two ways a delivery is POSTed: to a client-supplied callback URL (SEP-3415 webhook
security), or to a URL of the operator's webhooks file, called as configured.

Rules implemented:
- Both: no redirect is followed, no proxy or `.netrc` from the environment is used; an attempt
  takes at most the caller's time-out; at most `MAX_RESPONSE_BYTES` of an answer are read. A
  failure is a `CallbackError` whose `category` is one of SEP-3415's lastError categories
  (`connection_refused`, `timeout`, `tls_error`); its message never holds the URL.
- A client's URL (`post`) is checked again (mcp_tasks/webhooks/callback_url.py), then its host
  is resolved now, at delivery time, and the first resolved address that may be called is the
  one connected to, by its IP: the name cannot resolve elsewhere between the check and the
  connection (DNS rebinding). The original host travels in `Host` and in TLS SNI, and the
  certificate is checked against it. No resolved address allowed: `connection_refused`.
  Trust: the system's certificate authorities, plus the operator's `MCP_TASKS_EVENTS_CA_FILE`.
- An operator's URL (`post_configured`) is called as it is written, http or https, whatever
  address it names: the operator chose it.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from mcp_tasks.webhooks.callback_url import address_allowed, callback_url_problem

MAX_RESPONSE_BYTES = 64 * 1024


@dataclass(frozen=True)
class CallbackPolicy:
    allow_private: bool = False
    ca_file: str | None = None


@dataclass(frozen=True)
class CallbackAnswer:
    status: int
    body: bytes
    retry_after: str


class CallbackError(Exception):
    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category


async def resolved_address(host: str, port: int, allow_private: bool) -> str:
    """The address to connect to for `host`, checked; CallbackError when none may be called."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise CallbackError("connection_refused", "the callback host does not resolve") from None
    for info in infos:
        address = str(info[4][0])
        if address_allowed(address, allow_private):
            return address
    raise CallbackError(
        "connection_refused",
        "the callback host resolves only to addresses that may not be called (loopback, "
        "private, link-local or reserved; see MCP_TASKS_EVENTS_ALLOW_PRIVATE_ADDRESSES)",
    )


def _tls(policy: CallbackPolicy) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if policy.ca_file:
        context.load_verify_locations(policy.ca_file)
    return context


async def post(
    url: str, body: bytes, headers: dict[str, str], policy: CallbackPolicy, timeout_s: float
) -> CallbackAnswer:
    problem = callback_url_problem(url)
    if problem is not None:
        raise CallbackError("connection_refused", f"the callback URL {problem}")
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or 443
    address = await resolved_address(host, port, policy.allow_private)
    literal = f"[{address}]" if ":" in address else address
    pinned = urlunsplit(("https", f"{literal}:{port}", parts.path or "/", parts.query, ""))
    sent = {**headers, "Host": host if parts.port in (None, 443) else f"{host}:{port}"}
    client = httpx.AsyncClient(
        verify=_tls(policy), timeout=timeout_s, follow_redirects=False, trust_env=False
    )
    return await _exchange(client, pinned, body, sent, {"sni_hostname": host}, timeout_s)


async def post_configured(
    url: str, body: bytes, headers: dict[str, str], timeout_s: float
) -> CallbackAnswer:
    client = httpx.AsyncClient(timeout=timeout_s, follow_redirects=False, trust_env=False)
    return await _exchange(client, url, body, headers, {}, timeout_s)


async def _exchange(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    extensions: dict[str, Any],
    timeout_s: float,
) -> CallbackAnswer:
    try:
        async with (
            asyncio.timeout(timeout_s),
            client,
            client.stream(
                "POST", url, content=body, headers=headers, extensions=extensions
            ) as response,
        ):
            received = bytearray()
            async for chunk in response.aiter_raw():
                received += chunk
                if len(received) >= MAX_RESPONSE_BYTES:
                    break  # the rest of an answer is nobody's business
            return CallbackAnswer(
                response.status_code,
                bytes(received[:MAX_RESPONSE_BYTES]),
                response.headers.get("retry-after", ""),
            )
    except (TimeoutError, httpx.TimeoutException):
        raise CallbackError("timeout", f"no answer within {timeout_s:g} s") from None
    except httpx.HTTPError as err:  # its message may show the URL: only its kind
        category = "tls_error" if _is_tls(err) else "connection_refused"
        raise CallbackError(category, f"the POST failed: {type(err).__name__}") from None


def _is_tls(err: BaseException) -> bool:
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return True
        cause = cause.__cause__ or cause.__context__
    return "SSL" in str(err) or "certificate" in str(err).lower()
