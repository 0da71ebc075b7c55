"""Signed tokens: what the server hands out and reads back, signed with the state secret.

MRTR `requestState`, 2025-11-25 session ids, the inbox's session cookie and its CSRF tokens are
all made here, on itsdangerous (the signing library of Starlette's `SessionMiddleware`), one
kind per salt. Rules implemented:
- Keys come newest first (mcp_server/protocol/frame/state_keys.py parses the setting): the first
  signs, every one verifies, so the secret rotates without ending anything.
- Each kind has its own salt (`purpose`): the key is HMAC(key, salt) and the signature
  HMAC-SHA256 under it, so a token of one kind (or of one inbox authentication configuration)
  is never a token of another.
- A token is itsdangerous's URL-safe timed serialization, `payload.timestamp.signature`: compact
  JSON, zlib-compressed behind a leading "." when that is shorter, each part unpadded base64url.
  It is read for `max_age_s` after it was signed, and also when it was signed up to
  `CLOCK_SKEW_S` in the future (another replica's clock ahead), never further ahead.
- Only the canonical spelling is read. itsdangerous decodes a padded signature, one with stray
  bits in its last character or with characters outside the alphabet to the same bytes; a
  token whose parts do not encode back to exactly what was received is malformed, so what is
  keyed on a token (a session's tasks, the questions its stream relays) has one key.
- JSON is written without NaN or infinity (a ValueError instead), and read the same way.
- `Signatures` signs a value the caller already holds (a CSRF token signs the session id): the
  token is the signature alone, 64 lower-case hex digits and no other spelling.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from itsdangerous import BadData, BadPayload, Signer, TimestampSigner, URLSafeTimedSerializer
from itsdangerous.encoding import base64_decode, base64_encode

# How far in the future a token's timestamp may be (the clock of the replica that signed it).
CLOCK_SKEW_S = 300
_TOKEN = re.compile(r"\.?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){2}")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_HEX_SIGNATURE = re.compile(r"[0-9a-f]{64}")


class TokenError(ValueError):
    """A token that is not one of ours as it stands."""


class MalformedToken(TokenError):
    """Not a token of this shape, or not in its canonical spelling."""


class ForgedToken(TokenError):
    """Well-formed, but signed by none of the keys (or for another purpose)."""


class ExpiredToken(TokenError):
    """Signed by us, but longer ago than its kind lasts (or too far in the future)."""


def decode_canonical(text: str) -> bytes:
    """The bytes of unpadded base64url `text`, only when they encode back to `text` exactly;
    MalformedToken for padding, other alphabets or stray bits in the last character."""
    if not _BASE64URL.fullmatch(text):
        raise MalformedToken("not unpadded base64url")
    try:
        data = base64_decode(text)
    except BadData as exc:  # a length no base64 has
        raise MalformedToken("not base64url") from exc
    if base64_encode(data).decode("ascii") != text:
        raise MalformedToken("not canonical base64url")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _CompactJson:
    """The payload's JSON: no spaces, no NaN or infinity either way."""

    @staticmethod
    def dumps(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)

    @staticmethod
    def loads(text: str | bytes) -> Any:
        return json.loads(text, parse_constant=_no_constant)


class _ClockedSigner(TimestampSigner):
    """itsdangerous's timestamp signer, on the caller's clock (an injected one in tests)."""

    def __init__(self, *args: Any, clock: Callable[[], float], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clock = clock

    def get_timestamp(self) -> int:
        return int(self._clock())


def _oldest_first(keys: Sequence[bytes]) -> list[bytes]:
    if not keys:
        raise ValueError("a signed token needs at least one key")
    return list(reversed(keys))  # itsdangerous signs with the last key


class SignedTokens:
    """Tokens of one kind: a JSON payload, signed and timestamped, read for `max_age_s`."""

    def __init__(
        self,
        keys: Sequence[bytes],
        purpose: str,
        *,
        max_age_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._serializer = URLSafeTimedSerializer(
            _oldest_first(keys),
            salt=purpose,
            serializer=_CompactJson,
            signer=_ClockedSigner,
            signer_kwargs={
                "key_derivation": "hmac",
                "digest_method": hashlib.sha256,
                "clock": clock,
            },
        )
        self._max_age_s = max_age_s
        self._clock = clock

    def dumps(self, payload: Any) -> str:
        token: str = self._serializer.dumps(payload)
        return token

    def loads(self, token: str) -> Any:
        """The payload of a token this kind signed; a TokenError subclass for anything else."""
        if not _TOKEN.fullmatch(token):
            raise MalformedToken("not a signed token")
        for part in token.lstrip(".").split("."):
            decode_canonical(part)
        try:
            payload, signed_at = self._serializer.loads(token, return_timestamp=True)
        except BadPayload as exc:
            raise MalformedToken("a signed payload that is not JSON") from exc
        except BadData as exc:
            raise ForgedToken("signed by none of the keys") from exc
        # Not itsdangerous's own max_age: it refuses any age below 0, so a token signed by a
        # replica whose clock is a second ahead would be refused by its peers.
        age = self._clock() - signed_at.timestamp()
        if not -CLOCK_SKEW_S <= age <= self._max_age_s:
            raise ExpiredToken("signed too long ago (or too far in the future)")
        return payload


class Signatures:
    """Signatures of values the caller holds (no payload, no expiry): the token is the
    HMAC-SHA256 of the value under this purpose's key, in lower-case hex (the shape of the
    inbox forms' field)."""

    def __init__(self, keys: Sequence[bytes], purpose: str) -> None:
        self._signer = Signer(
            _oldest_first(keys), salt=purpose, key_derivation="hmac", digest_method=hashlib.sha256
        )

    def sign(self, value: str) -> str:
        return base64_decode(self._signer.get_signature(value)).hex()

    def valid(self, value: str, signature: str) -> bool:
        """Whether `signature`, in its canonical spelling, is one of `value` under any key."""
        if not _HEX_SIGNATURE.fullmatch(signature):
            return False
        return self._signer.verify_signature(value, base64_encode(bytes.fromhex(signature)))
