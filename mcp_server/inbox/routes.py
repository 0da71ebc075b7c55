"""The inbox's routes, mounted on the app under /inbox (`add_inbox_routes`).

Every POST checks the CSRF token of its session first (403 otherwise). Answers go through the
protocol layer's own `submit_answers`, with a RequestContext of the signed-in principal, so
validation, approver rules and rate limits are those of `tasks/update`; its -32602 message is
shown on the page. A task the principal may not read is 404, the same as a missing one.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import mcp_types as core
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from mcp_server.http.auth import AuthError, Principal, identity_of
from mcp_server.inbox import pages
from mcp_server.inbox.csrf import FIELD_NAME
from mcp_server.inbox.events import list_stream, task_stream
from mcp_server.inbox.forms import FormProblem, answer_of
from mcp_server.inbox.session import InboxSession
from mcp_server.inbox.signin import SignIn
from mcp_server.protocol.context import RequestContext, Services
from mcp_server.protocol.errors import McpError, from_task_error
from mcp_server.protocol.tasks import lookup, submit_answers
from mcp_server.tasks.approvers import may_answer
from mcp_server.tasks.errors import TaskError, TaskNotFound
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.waiting import Waiting, WaitingTasks

STATIC_DIR = Path(__file__).parent / "static"
STATIC_FILES = {"inbox.css": "text/css", "inbox.js": "text/javascript"}
_SIGN_IN = "/inbox/login"


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status)


def _problem(status: int, title: str, message: str) -> HTMLResponse:
    return _html(pages.error_page(title, message), status)


class Inbox:
    def __init__(self, signin: SignIn) -> None:
        self.signin = signin

    # ----- helpers -------------------------------------------------------------------------

    def _services(self, request: Request) -> Services:
        services: Services = request.app.state.services
        return services

    def context(self, request: Request, principal: Principal) -> RequestContext:
        return RequestContext(
            request_id=str(request.state.request_id),
            method="tasks/update",
            capabilities=core.ClientCapabilities(),
            principal=principal.digest,
            headers=request.headers,
            grant=self.signin.authenticator.grant(principal),
            identity=identity_of(principal),
        )

    def _now(self, request: Request) -> datetime:
        return self._services(request).clock()

    def _logout_token(self, session: InboxSession) -> str | None:
        return self.signin.csrf.token(session) if self.signin.required else None

    def _finish(
        self, request: Request, response: Response, session: InboxSession, fresh: bool
    ) -> Response:
        if fresh:
            self.signin.set_cookie(response, request, session)
        return response

    async def _waiting(self, request: Request, principal: Principal) -> list[Waiting]:
        query: WaitingTasks | None = request.app.state.waiting
        if query is None:
            raise McpError(-32603, "the inbox needs the server's Temporal client", http_status=503)
        identity = identity_of(principal)
        return await query.waiting_for(principal.digest, identity.approver_ids, identity.every)

    async def _task(self, request: Request, principal: Principal, task_id: str) -> TaskSnapshot:
        return await lookup(self.context(request, principal), self._services(request), task_id)

    # ----- pages ---------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        current = self.signin.current(request)
        if current is None:
            return RedirectResponse(_SIGN_IN, status_code=303)
        session, fresh = current
        principal = session.principal
        assert principal is not None
        try:
            waiting = await self._waiting(request, principal)
        except (McpError, TaskError) as err:
            return self._unavailable(err)
        body = pages.list_page(
            waiting, self._now(request), principal.subject, self._logout_token(session)
        )
        return self._finish(request, _html(body), session, fresh)

    async def list_fragment(self, request: Request) -> Response:
        current = self.signin.current(request)
        if current is None or current[1]:
            return _problem(401, "Signed out", "Sign in again to see your inbox.")
        principal = current[0].principal
        assert principal is not None
        try:
            waiting = await self._waiting(request, principal)
        except (McpError, TaskError) as err:
            return self._unavailable(err)
        return _html(pages.list_section(waiting, self._now(request)))

    async def task(self, request: Request) -> Response:
        current = self.signin.current(request)
        if current is None:
            return RedirectResponse(_SIGN_IN, status_code=303)
        session, fresh = current
        principal = session.principal
        assert principal is not None
        part = request.path_params.get("part")
        if part not in (None, "live", "forms"):
            return _problem(404, "Not found", "No such page.")
        try:
            snapshot = await self._task(request, principal, request.path_params["task_id"])
        except TaskNotFound:
            return _problem(404, "Not found", "No such task, or not one you may see.")
        except (McpError, TaskError) as err:
            return self._unavailable(err)
        now, token = self._now(request), self.signin.csrf.token(session)
        if part == "live":
            return _html(pages.task_live(snapshot, now))
        mine = _answerable(snapshot, principal)
        if part == "forms":
            return _html(pages.task_forms(snapshot, token, mine))
        logout = self._logout_token(session)
        body = pages.task_page(snapshot, now, token, mine, principal.subject, logout)
        return self._finish(request, _html(body), session, fresh)

    async def answer(self, request: Request) -> Response:
        session = self.signin.session(request)
        form = await request.form()
        if not self.signin.csrf_ok(session, form.get(FIELD_NAME)) or session is None:
            return self._forged()
        principal = session.principal
        if principal is None:
            return RedirectResponse(_SIGN_IN, status_code=303)
        task_id = request.path_params["task_id"]
        services = self._services(request)
        ctx = self.context(request, principal)
        try:
            snapshot = await lookup(ctx, services, task_id)
        except TaskNotFound:
            return _problem(404, "Not found", "No such task, or not one you may see.")
        except (McpError, TaskError) as err:
            return self._unavailable(err)
        key = str(form.get("key", ""))
        question = snapshot.input_requests.get(key)
        if question is None:
            problem = "This question was already answered or withdrawn."
            return self._task_problem(request, session, snapshot, problem, 409)
        try:
            services.limits.rates.updates.take(ctx.principal)
            await submit_answers(ctx, services, task_id, {key: answer_of(question, form)})
        except TaskNotFound:
            return _problem(404, "Not found", "No such task, or not one you may see.")
        except FormProblem as err:
            return self._task_problem(request, session, snapshot, str(err), 400)
        except McpError as err:
            return self._task_problem(request, session, snapshot, err.message, err.http_status)
        except TaskError as err:
            return self._unavailable(err)
        return RedirectResponse(f"/inbox/tasks/{task_id}", status_code=303)

    def _task_problem(
        self,
        request: Request,
        session: InboxSession,
        snapshot: TaskSnapshot,
        problem: str,
        status: int,
    ) -> Response:
        principal = session.principal
        assert principal is not None
        body = pages.task_page(
            snapshot,
            self._now(request),
            self.signin.csrf.token(session),
            _answerable(snapshot, principal),
            principal.subject,
            self._logout_token(session),
            problem,
        )
        return _html(body, status)

    def _forged(self) -> Response:
        return _problem(
            403,
            "Refused",
            "This form did not come from your inbox session (its "
            "security token is missing or wrong). Reload the page and try again.",
        )

    def _unavailable(self, err: McpError | TaskError) -> Response:
        error = from_task_error(err) if isinstance(err, TaskError) else err
        status = error.http_status if error.http_status >= 400 else 503
        return _problem(status, "Unavailable", error.message)

    # ----- sign-in -------------------------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        if not self.signin.required:
            return RedirectResponse("/inbox", status_code=303)
        session, fresh = self.signin.pre_login(request)
        response = _html(pages.login_page(self.signin.csrf.token(session)))
        return self._finish(request, response, session, fresh)

    async def login(self, request: Request) -> Response:
        session = self.signin.session(request)
        form = await request.form()
        if session is None or not self.signin.csrf_ok(session, form.get(FIELD_NAME)):
            return self._forged()
        if not self.signin.required:
            return RedirectResponse("/inbox", status_code=303)
        try:
            principal = await self.signin.sign_in(str(form.get("token", "")))
        except AuthError as err:
            page = pages.login_page(
                self.signin.csrf.token(session), f"Not signed in: {err.description}."
            )
            return _html(page, 401 if err.status in (400, 401, 403) else err.status)
        signed_in = self.signin.sessions.new(principal)
        response = RedirectResponse("/inbox", status_code=303)
        return self._finish(request, response, signed_in, True)

    async def logout(self, request: Request) -> Response:
        session = self.signin.session(request)
        form = await request.form()
        if not self.signin.csrf_ok(session, form.get(FIELD_NAME)):
            return self._forged()
        response = RedirectResponse(_SIGN_IN if self.signin.required else "/inbox", 303)
        self.signin.clear_cookie(response, request)
        return response

    # ----- events and static files ---------------------------------------------------------

    async def events(self, request: Request) -> Response:
        current = self.signin.current(request)
        if current is None or current[1]:
            return _problem(401, "Signed out", "Sign in again to follow your inbox.")
        principal = current[0].principal
        assert principal is not None
        services = self._services(request)
        listening = services.listening
        task_id = request.query_params.get("task")
        try:
            if task_id is None:
                lease = listening.slots.acquire(principal.digest)
                stream = list_stream(lease, lambda: self._waiting(request, principal))
            else:
                snapshot = await self._task(request, principal, task_id)
                listening.check_room([task_id])
                lease = listening.slots.acquire(principal.digest)
                stream = task_stream(lease, listening, snapshot)
        except TaskNotFound:
            return _problem(404, "Not found", "No such task, or not one you may see.")
        except (McpError, TaskError) as err:
            return self._unavailable(err)
        headers = {"X-Accel-Buffering": "no"}
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_FILES:
            return _problem(404, "Not found", "No such file.")
        return FileResponse(STATIC_DIR / name, media_type=STATIC_FILES[name])


def _answerable(snapshot: TaskSnapshot, principal: Principal) -> frozenset[str]:
    """The outstanding request keys `principal` may answer (the rule of tasks/update)."""
    identity = identity_of(principal)
    return frozenset(
        key
        for key in snapshot.input_requests
        if may_answer(key, snapshot.owner, snapshot.approvers, principal.digest, identity)
    )


def add_inbox_routes(app: FastAPI, signin: SignIn) -> None:
    inbox = Inbox(signin)
    app.add_route("/inbox", inbox.home, methods=["GET"])
    app.add_route("/inbox/", inbox.home, methods=["GET"])
    app.add_route("/inbox/fragments/list", inbox.list_fragment, methods=["GET"])
    app.add_route("/inbox/tasks/{task_id}", inbox.task, methods=["GET"])
    app.add_route("/inbox/tasks/{task_id}/{part:str}", inbox.task, methods=["GET"])
    app.add_route("/inbox/tasks/{task_id}/answer", inbox.answer, methods=["POST"])
    app.add_route("/inbox/login", inbox.login_form, methods=["GET"])
    app.add_route("/inbox/login", inbox.login, methods=["POST"])
    app.add_route("/inbox/logout", inbox.logout, methods=["POST"])
    app.add_route("/inbox/events", inbox.events, methods=["GET"])
    app.add_route("/inbox/static/{name}", inbox.static, methods=["GET"])
