"""CSRF tokens of the inbox's forms: bound to the session, checked on every POST.

A token is an HMAC of the session id under a key of its own (derived from the state secret), so
it is worthless without the session cookie and the cookie is worthless without it. A POST with
a missing or wrong token is refused with 403 before anything else happens. Tokens are made
with the state secret's first key and accepted under any key it lists (state_keys.py), so a
form opened before a rotation still posts after it.
"""

from __future__ import annotations

from mcp_server.inbox.session import InboxSession, derive_key
from mcp_server.protocol.frame.state_keys import Signer, StateSecret

FIELD_NAME = "csrf"


class CsrfTokens:
    def __init__(self, secret: StateSecret) -> None:
        self._signer = Signer(secret, lambda key: derive_key(key, "csrf"))

    def token(self, session: InboxSession) -> str:
        return self._signer.sign(session.session_id.encode()).hex()

    def valid(self, session: InboxSession | None, offered: object) -> bool:
        if session is None or not isinstance(offered, str) or not offered:
            return False
        try:
            signature = bytes.fromhex(offered)
        except ValueError:
            return False
        return self._signer.verify(session.session_id.encode(), signature)
