"""The token formats that came before signed_tokens.py, read and never issued.

Each kind was `base64url(body).base64url(HMAC-SHA256)` (CSRF: the hex HMAC of the session id),
keyed by a key of its own derived from each key of the state secret. A token handed out in
that format before the switch is read until it expires, so nobody is signed out and no
round is lost by an upgrade. Readers dispatch on the shape: these formats have exactly one
"." (CSRF: 64 hex digits), a signed token of signed_tokens.py has at least two.

Delete this module, and the branch that calls it in each reader, once the release that
issues signed_tokens.py has run longer than the longest-lived token of the old one: 24 h for
a 2025-11-25 session id, `MCP_TASKS_INBOX_SESSION_S` (8 h by default, 7 days at most) for an
inbox sign-in and its CSRF tokens, 15 min for a `requestState`.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence

from mcp_tasks.signed_tokens import ForgedToken, MalformedToken, decode_canonical


def _inbox_key(key: bytes, purpose: str) -> bytes:
    return hmac.new(key, f"mcp-tasks inbox {purpose} v1".encode(), hashlib.sha256).digest()


def _session_key(key: bytes) -> bytes:
    return hashlib.sha256(b"mcp-session:" + key).digest()


def _verified(
    keys: Sequence[bytes], derive: Callable[[bytes], bytes], data: bytes, signature: bytes
) -> bool:
    """Whether any key signed `data` (every key is tried: no early exit on a match)."""
    matches = [
        hmac.compare_digest(signature, hmac.new(derive(key), data, hashlib.sha256).digest())
        for key in keys
    ]
    return any(matches)


def _parts(token: str) -> tuple[str, bytes]:
    if token.count(".") != 1:
        raise MalformedToken("not a token of the old format")
    body_text, signature_text = token.split(".")
    return body_text, decode_canonical(signature_text)


def request_state_body(token: str, keys: Sequence[bytes]) -> bytes:
    """The JSON body of an old `requestState`: HMAC of the body under each key as it is."""
    body_text, signature = _parts(token)
    body = decode_canonical(body_text)
    if not _verified(keys, lambda key: key, body, signature):
        raise ForgedToken("signed by none of the keys")
    return body


def session_id_body(session_id: str, keys: Sequence[bytes]) -> bytes:
    """The JSON body of an old 2025-11-25 session id."""
    body_text, signature = _parts(session_id)
    body = decode_canonical(body_text)
    if not _verified(keys, _session_key, body, signature):
        raise ForgedToken("signed by none of the keys")
    return body


def inbox_cookie_body(cookie: str, keys: Sequence[bytes], binding: str) -> bytes:
    """The JSON body of an old inbox cookie, signed (as base64 text) for its authentication
    configuration `binding`."""
    payload_text, signature = _parts(cookie)
    body = decode_canonical(payload_text)
    purpose = "session" if binding == "none" else f"session under {binding}"
    if not _verified(keys, lambda key: _inbox_key(key, purpose), payload_text.encode(), signature):
        raise ForgedToken("signed by none of the keys")
    return body


def csrf_valid(session_id: str, offered: str, keys: Sequence[bytes]) -> bool:
    """Whether `offered` is an old CSRF token (hex) of `session_id`."""
    try:
        signature = bytes.fromhex(offered)
    except ValueError:
        return False
    return offered == signature.hex() and _verified(
        keys, lambda key: _inbox_key(key, "csrf"), session_id.encode(), signature
    )
