"""The keys of MCP_TASKS_PAYLOAD_KEY, parsed: read by `Settings` when it validates them and by
the payload codec (mcp_server/temporal/codec.py) that encrypts with them."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence

KEY_BYTES = 32


def parse_keys(value: Sequence[str]) -> list[bytes]:
    """The keys of MCP_TASKS_PAYLOAD_KEY; a ValueError that never shows a key otherwise."""
    keys = []
    for position, text in enumerate(value, start=1):
        try:
            key = base64.b64decode(text.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeError):
            raise ValueError(f"key {position} is not base64") from None
        if len(key) != KEY_BYTES:
            raise ValueError(
                f"key {position} decodes to {len(key)} bytes; AES-256 needs {KEY_BYTES}"
            )
        keys.append(key)
    return keys
