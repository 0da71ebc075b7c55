"""The keys of `MCP_TASKS_STATE_SECRET`, so the secret rotates without ending anything.

The setting is a comma-separated list: the first key signs, every key listed verifies. To
rotate, put the new key first and keep the old one after it on every replica; once the longest
lifetime of what the old key signed has passed (a 2025-11-25 session id: 24 h; an inbox
sign-in: `MCP_TASKS_INBOX_SESSION_S`; MRTR `requestState`: 15 min), remove the old key.
Everything signed under the state secret uses these keys: `requestState`, 2025-11-25 session
ids, the inbox's session cookie and CSRF tokens (each under a key derived for its use alone).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence

MIN_KEY_BYTES = 16
# One key, or several (the first signs, any verifies).
StateSecret = bytes | Sequence[bytes]


def keys_of(secret: StateSecret, what: str = "state secret") -> tuple[bytes, ...]:
    """The keys of `secret`, newest first; a ValueError when there is none or one is short."""
    keys = (secret,) if isinstance(secret, bytes) else tuple(secret)
    if not keys:
        raise ValueError(f"the {what} needs at least one key")
    if any(len(key) < MIN_KEY_BYTES for key in keys):
        raise ValueError(f"the {what} must be at least {MIN_KEY_BYTES} bytes")
    return keys


def parse(value: str) -> tuple[bytes, ...]:
    """The keys of the setting's text: comma-separated, blanks around each ignored."""
    return keys_of(
        tuple(part.strip().encode("utf-8") for part in value.split(",") if part.strip()),
        "MCP_TASKS_STATE_SECRET",
    )


class Signer:
    """HMAC-SHA256 under a list of keys: `sign` with the first, `verify` with any."""

    def __init__(
        self,
        secret: StateSecret,
        derive: Callable[[bytes], bytes] = lambda key: key,
        what: str = "state secret",
    ) -> None:
        self._keys = tuple(derive(key) for key in keys_of(secret, what))

    def sign(self, body: bytes) -> bytes:
        return hmac.new(self._keys[0], body, hashlib.sha256).digest()

    def verify(self, body: bytes, signature: bytes) -> bool:
        """Whether any key signed `body` (every key is tried: no early exit on a match)."""
        matches = [
            hmac.compare_digest(signature, hmac.new(key, body, hashlib.sha256).digest())
            for key in self._keys
        ]
        return any(matches)

    def signatures(self, body: bytes) -> list[bytes]:
        """`body` signed with each key, newest first (for tokens compared whole)."""
        return [hmac.new(key, body, hashlib.sha256).digest() for key in self._keys]
