"""Who is signed in to the inbox, and signing in and out.

- `--auth none`: the local user, no sign-in; a session cookie is still issued (it binds the
  forms' CSRF tokens).
- `tokens` / `jwt`: the sign-in page takes the bearer credential once and checks it with the
  app's own Authenticator (the same check as /mcp); the session then carries the principal it
  stood for. Signing out clears the cookie.
- A session is only as good as its credential, checked again on every request that reads the
  cookie (every page, every answer): with `tokens`, the token must still be in the tokens
  file (which is read again when it changes), and the session gets the principal and scopes
  the file gives it today; revoked (`mcp-tasks token revoke`), the session is signed out.
  With `jwt`, a session ends at the token's `exp` (the authorization server, not this
  server, revokes a JWT: keep access tokens short-lived). A cookie issued under another
  authentication configuration is no session (session.py).
The cookie is read here only, for /inbox routes; /mcp never looks at it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple

import jwt
from starlette.requests import Request
from starlette.responses import Response

from mcp_server.auth.authenticators import (
    Authenticator,
    AuthError,
    NoAuthentication,
    TokenAuthentication,
    auth_binding,
    token_hash,
)
from mcp_server.inbox.csrf import CsrfTokens
from mcp_server.inbox.session import COOKIE_NAME, InboxSession, SessionCookies, cookie_header
from mcp_server.protocol.frame.state_keys import StateSecret
from mcp_tasks.identity import ANONYMOUS, Principal, reserved_subject
from mcp_tasks.settings import Settings

SIGN_IN_PATH = "/inbox/login"


class SignedIn(NamedTuple):
    session: InboxSession
    principal: Principal
    # The cookie must be (re)issued with the response (a session made for the local user).
    fresh: bool


@dataclass(frozen=True)
class SignIn:
    authenticator: Authenticator
    sessions: SessionCookies
    csrf: CsrfTokens
    # Sign-in is needed (tokens, jwt); without it every visitor is the local user.
    required: bool
    secure_cookie: bool

    def session(self, request: Request) -> InboxSession | None:
        """The cookie's session, its principal as its credential stands today (signed out
        when the credential no longer does)."""
        session = self.sessions.decode(request.cookies.get(COOKIE_NAME))
        if session is None or session.principal is None:
            return session
        principal = self.still_valid(session)
        if principal is None:
            return session.signed_out()
        return InboxSession(session.session_id, session.expires_at, principal, session.credential)

    def still_valid(self, session: InboxSession) -> Principal | None:
        """The principal `session`'s credential stands for now; None when it stands for
        nobody (revoked, or a principal this configuration does not have)."""
        principal = session.principal
        if principal is None:
            return None
        if isinstance(self.authenticator, NoAuthentication):
            return ANONYMOUS if principal.every_scope else None
        if principal.every_scope or reserved_subject(principal.subject):
            return None
        if isinstance(self.authenticator, TokenAuthentication):
            if session.credential is None:
                return None
            try:
                return self.authenticator.principal_of(session.credential)
            except AuthError:
                return None  # the tokens file cannot be read: nobody is signed in
        return principal  # jwt: the session ends at the token's exp

    def current(self, request: Request) -> SignedIn | None:
        """The signed-in session, its principal, and whether its cookie must be (re)issued;
        None: sign in."""
        session = self.session(request)
        if session is not None and session.principal is not None:
            return SignedIn(session, session.principal, False)
        if self.required:
            return None
        return SignedIn(self.sessions.new(ANONYMOUS), ANONYMOUS, True)

    def pre_login(self, request: Request) -> tuple[InboxSession, bool]:
        """The session the sign-in form's token is bound to (made when there is none)."""
        session = self.session(request)
        if session is not None:
            return session, False
        return self.sessions.new(None), True

    async def sign_in(self, credential: str) -> InboxSession:
        """A session for the principal of `credential`, checked as /mcp checks it (AuthError
        if refused), ending no later than the credential (a JWT's `exp`)."""
        credential = credential.strip()
        principal = await self.authenticator.authenticate(f"Bearer {credential}")
        reference = (
            token_hash(credential) if isinstance(self.authenticator, TokenAuthentication) else None
        )
        return self.sessions.new(principal, _expiry(credential), reference)

    def secure(self, request: Request) -> bool:
        return self.secure_cookie or request.url.scheme == "https"

    def set_cookie(self, response: Response, request: Request, session: InboxSession) -> None:
        max_age = session.expires_at - int(time.time())
        value = cookie_header(self.sessions.encode(session), max_age, self.secure(request))
        response.headers.append("Set-Cookie", value)

    def finish(
        self, request: Request, response: Response, session: InboxSession, fresh: bool
    ) -> Response:
        """`response`, with the session's cookie when it is new."""
        if fresh:
            self.set_cookie(response, request, session)
        return response

    def clear_cookie(self, response: Response, request: Request) -> None:
        response.headers.append("Set-Cookie", cookie_header("", 0, self.secure(request)))

    def csrf_ok(self, session: InboxSession | None, form_value: object) -> bool:
        return self.csrf.valid(session, form_value)


def inbox_signin(settings: Settings, authenticator: Authenticator, secret: StateSecret) -> SignIn:
    return SignIn(
        authenticator=authenticator,
        sessions=SessionCookies(secret, settings.inbox_session_s, auth_binding(settings)),
        csrf=CsrfTokens(secret),
        required=settings.auth != "none",
        secure_cookie=settings.inbox_secure_cookie,
    )


def _expiry(credential: str) -> int | None:
    """The `exp` of a JWT the authenticator has just verified (None for any other token)."""
    if credential.count(".") != 2:
        return None
    try:
        claims = jwt.decode(credential, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    expiry = claims.get("exp")
    return expiry if isinstance(expiry, int) and not isinstance(expiry, bool) else None
