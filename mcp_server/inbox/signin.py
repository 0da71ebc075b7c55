"""Who is signed in to the inbox, and signing in and out.

- `--auth none`: the local user, no sign-in; a session cookie is still issued (it binds the
  forms' CSRF tokens).
- `tokens` / `jwt`: the sign-in page takes the bearer credential once and checks it with the
  app's own Authenticator (the same check as /mcp); the session then carries the principal it
  stood for. Signing out clears the cookie.
The cookie is read here only, for /inbox routes; /mcp never looks at it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple

import jwt
from starlette.requests import Request
from starlette.responses import Response

from mcp_server.http.auth import ANONYMOUS, Authenticator, Principal
from mcp_server.inbox.csrf import CsrfTokens
from mcp_server.inbox.session import COOKIE_NAME, InboxSession, SessionCodec, cookie_header
from mcp_server.runtime.config import Settings

SIGN_IN_PATH = "/inbox/login"


class SignedIn(NamedTuple):
    session: InboxSession
    principal: Principal
    # The cookie must be (re)issued with the response (a session made for the local user).
    fresh: bool


@dataclass(frozen=True)
class SignIn:
    authenticator: Authenticator
    sessions: SessionCodec
    csrf: CsrfTokens
    # Sign-in is needed (tokens, jwt); without it every visitor is the local user.
    required: bool
    secure_cookie: bool

    def session(self, request: Request) -> InboxSession | None:
        return self.sessions.decode(request.cookies.get(COOKIE_NAME))

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
        principal = await self.authenticator.authenticate(f"Bearer {credential.strip()}")
        return self.sessions.new(principal, not_after=_expiry(credential.strip()))

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


def inbox_signin(settings: Settings, authenticator: Authenticator, secret: bytes) -> SignIn:
    return SignIn(
        authenticator=authenticator,
        sessions=SessionCodec(secret, settings.inbox_session_s),
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
