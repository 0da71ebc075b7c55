"""How a webhook delivery is signed: the Standard Webhooks profile
(https://www.standardwebhooks.com), which SEP-3415 (the MCP Events extension) adopts. The
operators' webhooks and the client-subscribed events both sign here; a receiver checks them
with any Standard Webhooks verifier (the tests use the reference one, `standardwebhooks`).

Rules implemented:
- Every signed POST carries `webhook-id` (the delivery id, the same on every retry: a receiver
  deduplicates on it), `webhook-timestamp` (the Unix seconds of this attempt) and
  `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body bytes>`.
  The id is inside the signed content, so a receiver never deduplicates on an unsigned value.
- Several keys (a secret being rotated) give several signatures, separated by a space; a
  receiver accepts the delivery when any one verifies.
- A secret is `whsec_` and the base64 of 24 to 64 random bytes (the key is those bytes). An
  operator's older secret without the prefix (at least 16 characters) still signs: its key is
  its UTF-8 bytes, the key it always was (`Webhook(secret.encode())` in `standardwebhooks`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable
from secrets import token_bytes

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
EVENT_HEADER = "Mcp-Tasks-Event"
SECRET_PREFIX = "whsec_"
MIN_KEY_BYTES = 24
MAX_KEY_BYTES = 64
MIN_RAW_SECRET_CHARS = 16
VERSION = "v1"


class SecretError(ValueError):
    """A secret that cannot sign; the message says why (never the secret)."""


def whsec_key(secret: str) -> bytes:
    """The key of a `whsec_` secret; SecretError unless it is base64 of 24 to 64 bytes."""
    if not secret.startswith(SECRET_PREFIX):
        raise SecretError(f"must start with {SECRET_PREFIX}")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise SecretError(f"must be {SECRET_PREFIX} followed by base64") from None
    if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        raise SecretError(
            f"must be {SECRET_PREFIX} followed by the base64 of {MIN_KEY_BYTES} to "
            f"{MAX_KEY_BYTES} bytes (it holds {len(key)})"
        )
    return key


def signing_key(secret: str) -> bytes:
    """The HMAC key of an operator's secret: a `whsec_` secret's bytes, or (the secrets of
    earlier releases) the UTF-8 bytes of a plain one of at least 16 characters."""
    if secret.startswith(SECRET_PREFIX):
        return whsec_key(secret)
    if len(secret) < MIN_RAW_SECRET_CHARS:
        raise SecretError(
            f"must be {SECRET_PREFIX}<base64> or at least {MIN_RAW_SECRET_CHARS} characters"
        )
    return secret.encode("utf-8")


def new_secret(key_bytes: int = 32) -> str:
    """A fresh `whsec_` secret (what `mcp-tasks` tells operators to generate)."""
    return SECRET_PREFIX + base64.b64encode(token_bytes(key_bytes)).decode("ascii")


def _one(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return f"{VERSION},{base64.b64encode(digest).decode('ascii')}"


def signature(keys: Iterable[bytes], message_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` value: one `v1,<base64>` per key, space-separated."""
    return " ".join(_one(key, message_id, timestamp, body) for key in keys)


def signed_headers(
    keys: Iterable[bytes], message_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The three Standard Webhooks headers of one attempt."""
    return {
        ID_HEADER: message_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(keys, message_id, timestamp, body),
    }
