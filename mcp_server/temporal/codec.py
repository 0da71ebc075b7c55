"""Encryption of what this server stores in Temporal (MCP_TASKS_PAYLOAD_KEY), and how every
Temporal client of the process converts data.

- MCP_TASKS_PAYLOAD_KEY is a comma-separated list of keys, each the base64 of 32 random bytes
  (`python -c 'import os,base64;print(base64.b64encode(os.urandom(32)).decode())'`). Unset:
  nothing is encrypted, payloads are stored exactly as they always were; the codec only
  recognizes an encrypted payload, to say that the key is missing.
- Set: every payload is encrypted with the first key (AES-256-GCM, a fresh 96-bit nonce per
  payload, the key id as associated data) before it reaches Temporal: workflow inputs and
  results, signal and query payloads, activity inputs and results, heartbeat details, the memo
  (the SDK routes it through the codec, and `describe()` decodes it), headers (so the
  interceptor's `mcp-secrets` header too), and failures' messages and stack traces (moved
  into their encoded attributes). Search attributes are not payloads of the codec: Temporal
  indexes them in plaintext.
- Each encrypted payload names its key in the metadata (`encryption-key-id`, derived from the
  key), so keys rotate: put the new key first and keep the old ones after it; old payloads
  still decrypt, new ones use the new key. A payload that is not encrypted is read as is (a
  history written before the key was set stays readable).
- A payload whose key is not listed (or that does not decrypt with it) is an error naming the
  key id and the variable; read by the server, it becomes a -32603 with that message.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.common import HeaderCodecBehavior
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    PayloadCodec,
)

from mcp_server.tasks.errors import BackendRefused
from mcp_tasks.payload_keys import parse_keys

VARIABLE = "MCP_TASKS_PAYLOAD_KEY"
ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
NONCE_BYTES = 12


class PayloadKeyError(BackendRefused):
    """A payload this process cannot decrypt: its key is not among MCP_TASKS_PAYLOAD_KEY's."""

    def __init__(self, detail: str) -> None:
        super().__init__("the payload codec", "decrypt a payload", detail)


def key_id(key: bytes) -> str:
    """A short public name of a key (not the key: a hash of it, under a fixed label)."""
    return hashlib.sha256(b"mcp-tasks payload key\0" + key).hexdigest()[:16]


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM; encrypts with the first key, decrypts with any listed. Without keys it
    changes nothing, and names the missing key when it meets an encrypted payload."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        self._keys = {key_id(key): AESGCM(key) for key in keys}
        self._current = key_id(keys[0]) if keys else None

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        if self._current is None:
            return list(payloads)
        cipher = self._keys[self._current]
        kid = self._current.encode()
        encoded = []
        for payload in payloads:
            nonce = os.urandom(NONCE_BYTES)
            sealed = cipher.encrypt(nonce, payload.SerializeToString(), kid)
            encoded.append(
                Payload(metadata={"encoding": ENCODING, KEY_ID: kid}, data=nonce + sealed)
            )
        return encoded

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._decode(payload) for payload in payloads]

    def _decode(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # written without the codec
        kid = payload.metadata.get(KEY_ID, b"").decode("ascii", "replace")
        cipher = self._keys.get(kid)
        if not self._keys:
            raise PayloadKeyError(f"it is encrypted (key id {kid!r}) and {VARIABLE} is not set")
        if cipher is None:
            raise PayloadKeyError(
                f"it was encrypted with key id {kid!r}, which {VARIABLE} does not list "
                f"(it lists {', '.join(sorted(self._keys))}); add that key after the current one"
            )
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            return Payload.FromString(cipher.decrypt(nonce, sealed, kid.encode()))
        except InvalidTag:
            raise PayloadKeyError(
                f"it does not decrypt with the key of id {kid!r} (altered data)"
            ) from None


def data_converter(payload_keys: Sequence[str]) -> DataConverter:
    """The data converter of every Temporal client: the default one with the codec, which
    encrypts only when MCP_TASKS_PAYLOAD_KEY is set."""
    if not payload_keys:
        return dataclasses.replace(DataConverter.default, payload_codec=EncryptionCodec([]))
    return dataclasses.replace(
        DataConverter.default,
        payload_codec=EncryptionCodec(parse_keys(payload_keys)),
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


def header_codec_behavior(payload_keys: Sequence[str]) -> HeaderCodecBehavior:
    """Headers go through the codec too when there is one (the `mcp-secrets` header)."""
    return HeaderCodecBehavior.CODEC if payload_keys else HeaderCodecBehavior.NO_CODEC
