"""Integrity-protected, expiring `requestState` for MRTR rounds of tools/call (wire §1.6).

The state is attacker-controlled, so it is signed with HMAC-SHA256 and binds the method, the
tool, a digest of the arguments, the principal and an expiry. It also carries the answers of
earlier rounds, so a stateless server can ask in several rounds. The round of a task run
attached to the call (attached/rounds.py) names its task instead, and how many answers of
that call were refused so far.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from dataclasses import dataclass
from typing import Any

from mcp_server.protocol.frame import strict_json
from mcp_server.protocol.frame.errors import invalid_params
from mcp_server.protocol.frame.state_keys import Signer, StateSecret

_B64URL = re.compile(r"[A-Za-z0-9_-]*")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """The bytes of canonical unpadded base64url, and nothing else (ValueError): padding,
    other alphabets, stray bits in the last character all name the same bytes differently."""
    if not _B64URL.fullmatch(text):
        raise ValueError("not unpadded base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:
        raise ValueError("not canonical base64url")
    return data


def canonical_digest(value: Any) -> str:
    encoded = strict_json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PendingRound:
    tool: str
    arguments_digest: str
    principal: str
    answers: dict[str, Any]
    # The task whose question the round asks (attached/rounds.py); "" for a tool's own MRTR.
    task_id: str = ""
    # How many answers to this task's questions the call refused so far.
    refused: int = 0


class RequestStateCodec:
    def __init__(self, secret: StateSecret, lifetime_s: float = 900.0) -> None:
        """`secret`: the state secret's keys (state_keys.py): signed with the first, a token
        signed with any of them is read."""
        self._signer = Signer(secret, what="requestState secret")
        self._lifetime_s = lifetime_s

    def encode(self, pending: PendingRound, *, now: float | None = None) -> str:
        moment = time.time() if now is None else now
        payload = {
            "m": "tools/call",
            "t": pending.tool,
            "a": pending.arguments_digest,
            "p": pending.principal,
            "r": pending.answers,
            "exp": int((moment + self._lifetime_s) * 1000),
        }
        if pending.task_id:
            payload |= {"k": pending.task_id, "n": pending.refused}
        body = strict_json.dumps(payload, separators=(",", ":")).encode("utf-8")
        return f"{_b64(body)}.{_b64(self._signer.sign(body))}"

    def decode(self, token: object, *, now: float | None = None) -> PendingRound:
        """The round a valid token describes; -32602 for anything forged, altered or stale."""
        if not isinstance(token, str) or token.count(".") != 1 or len(token) > 1_000_000:
            raise invalid_params("requestState is malformed")
        body_text, signature_text = token.split(".")
        try:
            body = _unb64(body_text)
            signature = _unb64(signature_text)
        except (ValueError, TypeError) as exc:
            raise invalid_params("requestState is malformed") from exc
        if not self._signer.verify(body, signature):
            raise invalid_params("requestState failed its integrity check")
        try:
            payload = strict_json.loads(body)
        except ValueError as exc:  # signed with our key, and still read strictly
            raise invalid_params("requestState is malformed") from exc
        if not isinstance(payload, dict):
            raise invalid_params("requestState is malformed")
        moment = time.time() if now is None else now
        if payload.get("m") != "tools/call" or payload.get("exp", 0) < moment * 1000:
            raise invalid_params("requestState has expired; call the tool again without it")
        return PendingRound(
            tool=payload["t"],
            arguments_digest=payload["a"],
            principal=payload["p"],
            answers=dict(payload.get("r") or {}),
            task_id=str(payload.get("k") or ""),
            refused=int(payload.get("n") or 0),
        )
