"""CSRF tokens of the inbox's forms: bound to the session, checked on every POST.

A token is the signature of the session id under a salt of its own (mcp_tasks/signed_tokens.py),
so it is worthless without the session cookie and the cookie is worthless without it. A POST with
a missing or wrong token is refused with 403 before anything else happens. Tokens are made
with the state secret's first key and accepted under any key it lists (state_keys.py), so a
form opened before a rotation still posts after it.
"""

from __future__ import annotations

from mcp_server.inbox.session import InboxSession
from mcp_server.protocol.frame.state_keys import StateSecret, keys_of
from mcp_tasks import legacy_tokens
from mcp_tasks.signed_tokens import Signatures

FIELD_NAME = "csrf"


class CsrfTokens:
    def __init__(self, secret: StateSecret) -> None:
        self._keys = keys_of(secret)
        self._signatures = Signatures(self._keys, "mcp-tasks inbox csrf")

    def token(self, session: InboxSession) -> str:
        return self._signatures.sign(session.session_id)

    def valid(self, session: InboxSession | None, offered: object) -> bool:
        if session is None or not isinstance(offered, str) or not offered:
            return False
        return self._signatures.valid(session.session_id, offered) or (
            # From a form served before signed_tokens.py (legacy_tokens.py says until when).
            legacy_tokens.csrf_valid(session.session_id, offered, self._keys)
        )
