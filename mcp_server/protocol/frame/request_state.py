"""Integrity-protected, expiring `requestState` for MRTR rounds of tools/call (wire §1.6).

The state is attacker-controlled, so it is a signed token (mcp_tasks/signed_tokens.py: under
the state secret, read for `lifetime_s` and only in its canonical spelling) that binds the
method, the tool, a digest of the arguments, the principal and an expiry. It also carries the
answers of earlier rounds, so a stateless server can ask in several rounds. The round of a task
run attached to the call (attached/rounds.py) names its task instead, and how many answers of
that call were refused so far.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_server.protocol.frame import strict_json
from mcp_server.protocol.frame.errors import invalid_params
from mcp_server.protocol.frame.state_keys import StateSecret, keys_of
from mcp_tasks import legacy_tokens
from mcp_tasks.signed_tokens import ExpiredToken, ForgedToken, SignedTokens

MAX_TOKEN_LENGTH = 1_000_000
_EXPIRED = "requestState has expired; call the tool again without it"


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
    def __init__(
        self,
        secret: StateSecret,
        lifetime_s: float = 900.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`secret`: the state secret's keys (state_keys.py): signed with the first, a token
        signed with any of them is read."""
        self._keys = keys_of(secret, "requestState secret")
        self._tokens = SignedTokens(
            self._keys, "mcp-tasks requestState", max_age_s=lifetime_s, clock=clock
        )
        self._lifetime_s = lifetime_s
        self._clock = clock

    def encode(self, pending: PendingRound) -> str:
        payload = {
            "m": "tools/call",
            "t": pending.tool,
            "a": pending.arguments_digest,
            "p": pending.principal,
            "r": pending.answers,
            "exp": int((self._clock() + self._lifetime_s) * 1000),
        }
        if pending.task_id:
            payload |= {"k": pending.task_id, "n": pending.refused}
        return self._tokens.dumps(payload)

    def decode(self, token: object) -> PendingRound:
        """The round a valid token describes; -32602 for anything forged, altered or stale."""
        if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH:
            raise invalid_params("requestState is malformed")
        try:
            payload = self._payload(token)
        except ForgedToken as exc:
            raise invalid_params("requestState failed its integrity check") from exc
        except ExpiredToken as exc:
            raise invalid_params(_EXPIRED) from exc
        except ValueError as exc:  # MalformedToken, or a body of the old format that is not JSON
            raise invalid_params("requestState is malformed") from exc
        if not isinstance(payload, dict):
            raise invalid_params("requestState is malformed")
        if payload.get("m") != "tools/call" or payload.get("exp", 0) < self._clock() * 1000:
            raise invalid_params(_EXPIRED)
        return PendingRound(
            tool=payload["t"],
            arguments_digest=payload["a"],
            principal=payload["p"],
            answers=dict(payload.get("r") or {}),
            task_id=str(payload.get("k") or ""),
            refused=int(payload.get("n") or 0),
        )

    def _payload(self, token: str) -> Any:
        if token.count(".") == 1:  # issued before signed_tokens.py (legacy_tokens.py)
            return strict_json.loads(legacy_tokens.request_state_body(token, self._keys))
        return self._tokens.loads(token)
