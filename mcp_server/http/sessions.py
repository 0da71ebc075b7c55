"""Sessions of the handshake era (2025-11-25 and older) with no session state in memory.

`initialize` mints the `Mcp-Session-Id`: a signed token (mcp_tasks/signed_tokens.py) that
carries the negotiated version, the capabilities the client declared and the principal it was
minted for. Any replica that shares `MCP_TASKS_STATE_SECRET` verifies it and serves the
session; nothing pins a client to one replica. Rules:
- A forged or altered id, or one minted for another principal, is 404 (the spec's answer to a
  session the server does not know: the client starts a new one).
- The id is visible ASCII (base64url and dots), as the transport spec requires, and only its
  canonical encoding is accepted (unpadded base64url that encodes back to the same text): a
  session has exactly one id, so what is keyed on it (a task's session digest, the questions
  its GET stream relays) cannot be split or dodged by spelling the id another way.
- An id expires `SESSION_LIFETIME_S` (24 h) after `initialize`, then is 404 like any unknown
  session and the client initializes again. 24 h outlasts a working day of hours-long
  approvals in one host session; nothing is lost when it ends (a session holds no state, its
  tasks stay the principal's and are reached by taskId). An id minted more than
  `CLOCK_SKEW_S` (signed_tokens.py) in the future (a replica's clock ahead) is refused too.
- DELETE of a session answers 405, which the spec allows: a signed session holds no state, so
  there is nothing to end (its tasks live on in Temporal, owned by the principal).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as core

from mcp_server.protocol.frame import strict_json
from mcp_server.protocol.frame.state_keys import StateSecret, keys_of
from mcp_tasks import legacy_tokens
from mcp_tasks.signed_tokens import CLOCK_SKEW_S, SignedTokens

_MAX_ID_LENGTH = 16_384
SESSION_LIFETIME_S = 24 * 3600


@dataclass(frozen=True)
class Session:
    version: str
    capabilities: core.ClientCapabilities
    principal: str


class SessionIds:
    def __init__(self, secret: StateSecret, clock: Callable[[], float] = time.time) -> None:
        """`secret`: the state secret's keys (state_keys.py): minted with the first, an id
        signed with any of them is served, so a rotation keeps every session."""
        self._keys = keys_of(secret, "session secret")
        self._tokens = SignedTokens(
            self._keys, "mcp-tasks session id", max_age_s=SESSION_LIFETIME_S, clock=clock
        )
        self._clock = clock

    def mint(self, session: Session) -> str:
        payload: dict[str, Any] = {
            "v": session.version,
            "c": session.capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
            "p": session.principal,
            "t": int(self._clock()),
            # Two sessions are never the same id, even for one principal in the same second:
            # a session's GET stream relays only the questions of the tasks it created.
            "n": secrets.token_hex(8),
        }
        return self._tokens.dumps(payload)

    def open(self, session_id: str, principal: str) -> Session | None:
        """The session this id stands for, or None when it is not one of ours (or not the
        caller's)."""
        if len(session_id) > _MAX_ID_LENGTH:
            return None
        try:
            payload = self._payload(session_id)
        except ValueError:  # not ours (TokenError), or an old-format body that is not JSON
            return None
        if not isinstance(payload, dict) or payload.get("p") != principal:
            return None
        minted = payload.get("t")
        now = self._clock()
        if not isinstance(minted, int) or not (
            now - SESSION_LIFETIME_S <= minted <= now + CLOCK_SKEW_S
        ):
            return None  # expired (or from a clock far ahead)
        return Session(
            version=str(payload["v"]),
            capabilities=core.ClientCapabilities.model_validate(payload.get("c") or {}),
            principal=principal,
        )

    def _payload(self, session_id: str) -> Any:
        if session_id.count(".") == 1:  # minted before signed_tokens.py (legacy_tokens.py)
            return strict_json.loads(legacy_tokens.session_id_body(session_id, self._keys))
        return self._tokens.loads(session_id)
