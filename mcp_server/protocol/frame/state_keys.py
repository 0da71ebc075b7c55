"""The keys of `MCP_TASKS_STATE_SECRET`, so the secret rotates without ending anything.

The setting is a comma-separated list: the first key signs, every key listed verifies. To
rotate, put the new key first and keep the old one after it on every replica; once the longest
lifetime of what the old key signed has passed (a 2025-11-25 session id: 24 h; an inbox
sign-in: `MCP_TASKS_INBOX_SESSION_S`; MRTR `requestState`: 15 min), remove the old key.
Everything signed under the state secret uses these keys: `requestState`, 2025-11-25 session
ids, the inbox's session cookie and CSRF tokens, each signed by mcp_tasks/signed_tokens.py under
a salt of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

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
