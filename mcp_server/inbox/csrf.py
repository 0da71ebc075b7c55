"""CSRF tokens of the inbox's forms: bound to the session, checked on every POST.

A token is an HMAC of the session id under a key of its own (derived from the state secret), so
it is worthless without the session cookie and the cookie is worthless without it. A POST with
a missing or wrong token is refused with 403 before anything else happens.
"""

from __future__ import annotations

import hashlib
import hmac

from mcp_server.inbox.session import InboxSession, derive_key

FIELD_NAME = "csrf"


class CsrfTokens:
    def __init__(self, secret: bytes) -> None:
        self._key = derive_key(secret, "csrf")

    def token(self, session: InboxSession) -> str:
        return hmac.new(self._key, session.session_id.encode(), hashlib.sha256).hexdigest()

    def valid(self, session: InboxSession | None, offered: object) -> bool:
        if session is None or not isinstance(offered, str) or not offered:
            return False
        return hmac.compare_digest(self.token(session), offered)
