"""The inbox's session cookie: who signed in, signed with the server's state secret.

Rules implemented:
- The cookie holds a random session id, the principal the credential stood for (subject,
  scopes, client), with `--auth tokens` the SHA-256 the tokens file knows the token by (so the
  token is checked again on every request: signin.py), and an expiry; never the credential
  itself. It is a signed token of the state secret (mcp_tasks/signed_tokens.py) under a salt of
  its own that names the authentication configuration that issued it (`auth_binding`: the mode
  and a digest of its settings), so no other signed value of the server (sessions,
  requestState) is one, and a cookie issued under another configuration (`--auth none`, then
  `tokens`; `tokens`, then `jwt`) is no session at all.
- The local user (every scope) is a session's principal only under `--auth none`.
- A session lasts `inbox_session_s`, and never longer than the JWT it came from (its `exp`).
- Expired, malformed or badly signed cookies are no session at all.
- Attributes: HttpOnly, SameSite=Strict, Path=/inbox, Max-Age; Secure on https or when the
  `inbox_secure_cookie` setting says so (a TLS-terminating proxy in front).
- A session without a principal exists only to bind the login form's CSRF token.
- The cookie is read only by the inbox's routes: /mcp never accepts it.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from mcp_server.protocol.frame.state_keys import StateSecret, keys_of
from mcp_tasks import legacy_tokens
from mcp_tasks.identity import Principal
from mcp_tasks.signed_tokens import SignedTokens

COOKIE_NAME = "mcp_inbox"
COOKIE_PATH = "/inbox"
# A session that only carries the login form's CSRF token.
PRE_LOGIN_S = 600
_MAX_COOKIE_LENGTH = 4096


@dataclass(frozen=True)
class InboxSession:
    session_id: str
    expires_at: int
    principal: Principal | None = None
    # With `--auth tokens`: the SHA-256 of the token it signed in with (checked on each use).
    credential: str | None = None

    def signed_out(self) -> InboxSession:
        """The same session (its CSRF token still binds) without its principal."""
        return InboxSession(self.session_id, self.expires_at)


def _principal_json(principal: Principal) -> dict[str, Any]:
    return {
        "s": principal.subject,
        "sc": sorted(principal.scopes),
        "c": principal.client,
        "e": principal.every_scope,
    }


def _principal_of(value: object) -> Principal | None:
    if not isinstance(value, dict):
        return None
    subject, scopes, client = value.get("s"), value.get("sc"), value.get("c")
    if not isinstance(subject, str) or not isinstance(scopes, list):
        return None
    if client is not None and not isinstance(client, str):
        return None
    return Principal(subject, frozenset(map(str, scopes)), client, value.get("e") is True)


class SessionCookies:
    def __init__(self, secret: StateSecret, lifetime_s: int, binding: str = "none") -> None:
        """`binding`: the authentication configuration (auth/authenticators.py `auth_binding`),
        part of the cookie's salt; signed with the first key of the state secret, a cookie
        signed with any is read (a rotation keeps every sign-in)."""
        self._keys = keys_of(secret)
        self._binding = binding
        self._tokens = SignedTokens(
            self._keys,
            f"mcp-tasks inbox session under {binding}",
            max_age_s=max(lifetime_s, PRE_LOGIN_S),
        )
        self.lifetime_s = lifetime_s
        self.local_user_allowed = binding == "none"

    def new(
        self,
        principal: Principal | None,
        not_after: int | None = None,
        credential: str | None = None,
    ) -> InboxSession:
        """A fresh session (a new id); it ends after its lifetime, or at `not_after` (the
        expiry of the credential it came from) if that is sooner."""
        lifetime = self.lifetime_s if principal is not None else PRE_LOGIN_S
        expires = int(time.time()) + lifetime
        if not_after is not None:
            expires = min(expires, not_after)
        return InboxSession(secrets.token_urlsafe(16), expires, principal, credential)

    def encode(self, session: InboxSession) -> str:
        body: dict[str, Any] = {"id": session.session_id, "exp": session.expires_at}
        if session.principal is not None:
            body["p"] = _principal_json(session.principal)
        if session.credential is not None:
            body["k"] = session.credential
        return self._tokens.dumps(body)

    def decode(self, cookie: str | None) -> InboxSession | None:
        if not cookie or len(cookie) > _MAX_COOKIE_LENGTH:
            return None
        try:
            body = self._body(cookie)
        except ValueError:  # not ours (TokenError), or an old-format body that is not JSON
            return None
        if not isinstance(body, dict):
            return None
        session_id, expires = body.get("id"), body.get("exp")
        if not isinstance(session_id, str) or not isinstance(expires, int):
            return None
        if expires <= time.time():
            return None
        principal = _principal_of(body.get("p")) if "p" in body else None
        if "p" in body and principal is None:
            return None
        if principal is not None and principal.every_scope and not self.local_user_allowed:
            return None  # the local user exists only under --auth none
        credential = body.get("k")
        if credential is not None and not isinstance(credential, str):
            return None
        return InboxSession(session_id, expires, principal, credential)

    def _body(self, cookie: str) -> Any:
        if cookie.count(".") == 1:  # issued before signed_tokens.py (legacy_tokens.py)
            return json.loads(legacy_tokens.inbox_cookie_body(cookie, self._keys, self._binding))
        return self._tokens.loads(cookie)


def cookie_header(value: str, max_age: int, secure: bool) -> str:
    """The Set-Cookie value (max_age 0 clears it)."""
    parts = [
        f"{COOKIE_NAME}={value}",
        f"Path={COOKIE_PATH}",
        f"Max-Age={max(0, max_age)}",
        "HttpOnly",
        "SameSite=Strict",
    ]
    if secure:
        parts.append("Secure")
    return "; ".join(parts)
