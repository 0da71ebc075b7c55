"""Signing in to the inbox and out (token modes; with `--auth none` there is nobody to sign in):
the sign-in form's POST carries the CSRF token of a pre-login session, the credential is
checked by the app's Authenticator, and a fresh session (a new id) replaces the old one."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from mcp_server.auth.authenticators import AuthError
from mcp_server.inbox import pages
from mcp_server.inbox.csrf import FIELD_NAME
from mcp_server.inbox.responses import forged, html_page
from mcp_server.inbox.signin import SIGN_IN_PATH as _SIGN_IN
from mcp_server.inbox.signin import SignIn


class Login:
    def __init__(self, signin: SignIn) -> None:
        self.signin = signin

    async def form(self, request: Request) -> Response:
        if not self.signin.required:
            return RedirectResponse("/inbox", status_code=303)
        session, fresh = self.signin.pre_login(request)
        response = html_page(pages.login_page(self.signin.csrf.token(session)))
        return self.signin.finish(request, response, session, fresh)

    async def sign_in(self, request: Request) -> Response:
        session = self.signin.session(request)
        form = await request.form()
        if session is None or not self.signin.csrf_ok(session, form.get(FIELD_NAME)):
            return forged()
        if not self.signin.required:
            return RedirectResponse("/inbox", status_code=303)
        try:
            signed_in = await self.signin.sign_in(str(form.get("token", "")))
        except AuthError as err:
            page = pages.login_page(
                self.signin.csrf.token(session), f"Not signed in: {err.description}."
            )
            return html_page(page, 401 if err.status in (400, 401, 403) else err.status)
        response = RedirectResponse("/inbox", status_code=303)
        return self.signin.finish(request, response, signed_in, True)

    async def sign_out(self, request: Request) -> Response:
        session = self.signin.session(request)
        form = await request.form()
        if not self.signin.csrf_ok(session, form.get(FIELD_NAME)):
            return forged()
        response = RedirectResponse(_SIGN_IN if self.signin.required else "/inbox", 303)
        self.signin.clear_cookie(response, request)
        return response
