"""The inbox's routes, mounted on the app under /inbox (`add_inbox_routes`).

Every POST checks the CSRF token of its session first (403 otherwise). Answers go through the
protocol layer's own `task_to_answer` and `submit_answers` (protocol/core/tasks.py), as
`tasks/update`'s do, with a RequestContext of the signed-in principal: one lookup, and the
validation, approver rules and rate limits of `tasks/update`; its -32602 message is shown on
the page. A task the principal may not read is 404, the same as a missing one.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from mcp_server.inbox import pages
from mcp_server.inbox.csrf import FIELD_NAME
from mcp_server.inbox.events import list_stream, task_stream
from mcp_server.inbox.forms import FormProblem, NeedsConfirmation, answer_of, message_of
from mcp_server.inbox.list_page import list_page, list_section, list_version, summary_of
from mcp_server.inbox.login import Login
from mcp_server.inbox.paging import WaitingPage, page_of
from mcp_server.inbox.responses import forged, html_page, problem, unavailable
from mcp_server.inbox.session import InboxSession
from mcp_server.inbox.signin import SIGN_IN_PATH, SignIn
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.tasks import lookup, submit_answers, task_to_answer
from mcp_server.protocol.frame.errors import INTERNAL_ERROR, McpError
from mcp_server.protocol.v2026.request_context import context_2026
from mcp_server.tasks.approvers import may_answer
from mcp_server.tasks.errors import TaskError, TaskNotFound
from mcp_server.tasks.inbox_store import InboxStore
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.task_history import Decision
from mcp_server.tasks.waiting import Waiting
from mcp_tasks.identity import Principal, identity_of

STATIC_DIR = Path(__file__).parent / "static"
STATIC_FILES = {"inbox.css": "text/css", "inbox.js": "text/javascript"}
_SIGN_IN = SIGN_IN_PATH


class Inbox:
    def __init__(self, signin: SignIn, web_ui: WebUiLink | None = None) -> None:
        self.signin = signin
        # taskId -> its workflow in the team's Temporal Web UI (MCP_TASKS_TEMPORAL_UI_URL)
        self.web_ui = web_ui or (lambda task_id: None)

    # ----- helpers -------------------------------------------------------------------------

    def _services(self, request: Request) -> Services:
        services: Services = request.app.state.services
        return services

    def context(self, request: Request, principal: Principal) -> RequestContext:
        return context_2026(
            str(request.state.request_id),
            "tasks/update",
            principal.digest,
            request.headers,
            grant=self.signin.authenticator.grant(principal),
            identity=identity_of(principal),
        )

    def _now(self, request: Request) -> datetime:
        return self._services(request).clock()

    def _logout_token(self, session: InboxSession) -> str | None:
        return self.signin.csrf.token(session) if self.signin.required else None

    def _store(self, request: Request) -> InboxStore:
        store: InboxStore | None = request.app.state.inbox
        if store is None:
            raise McpError(
                INTERNAL_ERROR, "the inbox needs the server's Temporal client", http_status=503
            )
        return store

    async def _waiting(self, request: Request, principal: Principal) -> list[Waiting]:
        identity = identity_of(principal)
        waiting, _ = await self._store(request).waiting_all(
            principal.digest, identity.approver_ids, identity.every
        )
        return waiting

    async def _page(
        self, request: Request, principal: Principal
    ) -> tuple[WaitingPage, dict[str, dict[str, Any]]]:
        """The page of the list the request names (`after`), and its tasks' arguments."""
        identity = identity_of(principal)
        store = self._store(request)
        waiting, capped = await store.waiting_all(
            principal.digest, identity.approver_ids, identity.every
        )
        after = request.query_params.get("after")
        shown = page_of(waiting, after, list_version(waiting), capped=capped)
        found = await asyncio.gather(
            *(store.arguments(w.task_id) for w in shown.tasks), return_exceptions=True
        )
        return shown, {
            w.task_id: args
            for w, args in zip(shown.tasks, found, strict=True)
            if isinstance(args, dict)
        }

    async def _decided(self, request: Request, snapshot: TaskSnapshot) -> dict[str, Decision]:
        """The decisions of the task's answered questions (none when its history is out of
        reach: the page still shows who answered, from the memo)."""
        if not snapshot.answered_by:
            return {}
        try:
            store = self._store(request)
            return await store.decisions(snapshot.task_id, set(snapshot.answered_by))
        except (McpError, TaskError):
            return {}

    async def _about(self, request: Request, snapshot: TaskSnapshot) -> str:
        """What the task was asked to do, for its page: its arguments in a line and what its
        tool says of them (a deploy: its pipeline's description). Empty when its history is
        out of reach."""
        try:
            arguments = await self._store(request).arguments(snapshot.task_id)
        except (McpError, TaskError):
            return ""
        asked = " ".join(message_of(r) for r in snapshot.input_requests.values())
        summary = summary_of(arguments, asked)
        tool = self._services(request).registry.get(snapshot.tool)
        described = tool.describe(arguments) if tool and tool.describe else None
        return f"{summary}: {described}" if summary and described else summary or described or ""

    async def _task(self, request: Request, principal: Principal, task_id: str) -> TaskSnapshot:
        return await lookup(self.context(request, principal), self._services(request), task_id)

    # ----- pages ---------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        current = self.signin.current(request)
        if current is None:
            return RedirectResponse(_SIGN_IN, status_code=303)
        session, principal, fresh = current
        try:
            shown, arguments = await self._page(request, principal)
        except (McpError, TaskError) as err:
            return unavailable(err)
        body = list_page(
            shown, arguments, self._now(request), principal.subject, self._logout_token(session)
        )
        return self.signin.finish(request, html_page(body), session, fresh)

    async def list_fragment(self, request: Request) -> Response:
        current = self.signin.current(request)
        if current is None or current.fresh:
            return problem(401, "Signed out", "Sign in again to see your inbox.")
        principal = current.principal
        try:
            shown, arguments = await self._page(request, principal)
        except (McpError, TaskError) as err:
            return unavailable(err)
        return html_page(list_section(shown, arguments, self._now(request)))

    async def task(self, request: Request) -> Response:
        current = self.signin.current(request)
        if current is None:
            return RedirectResponse(_SIGN_IN, status_code=303)
        session, principal, fresh = current
        part = request.path_params.get("part")
        if part not in (None, "live", "forms"):
            return problem(404, "Not found", "No such page.")
        try:
            snapshot = await self._task(request, principal, request.path_params["task_id"])
        except TaskNotFound:
            return problem(404, "Not found", "No such task, or not one you may see.")
        except (McpError, TaskError) as err:
            return unavailable(err)
        now, token = self._now(request), self.signin.csrf.token(session)
        mine = _answerable(snapshot, principal)
        if part == "forms":
            return html_page(pages.task_forms(snapshot, token, mine))
        decided = await self._decided(request, snapshot)
        if part == "live":
            return html_page(pages.task_live(snapshot, now, decided))
        who = (principal.subject, self._logout_token(session))
        about = await self._about(request, snapshot)
        body = pages.task_page(
            snapshot,
            now,
            token,
            mine,
            who,
            decided,
            about=about,
            web_ui=self.web_ui(snapshot.task_id),
        )
        return self.signin.finish(request, html_page(body), session, fresh)

    async def answer(self, request: Request) -> Response:
        session = self.signin.session(request)
        form = await request.form()
        if not self.signin.csrf_ok(session, form.get(FIELD_NAME)) or session is None:
            return forged()
        principal = session.principal
        if principal is None:
            return RedirectResponse(_SIGN_IN, status_code=303)
        task_id = request.path_params["task_id"]
        services = self._services(request)
        ctx = self.context(request, principal)
        try:
            snapshot = await task_to_answer(ctx, services, task_id)
        except TaskNotFound:
            return problem(404, "Not found", "No such task, or not one you may see.")
        except (McpError, TaskError) as err:
            return unavailable(err)
        key = str(form.get("key", ""))
        question = snapshot.input_requests.get(key)
        if question is None:
            gone = "This question was already answered or withdrawn."
            return await self._on_task_page(request, session, snapshot, gone, 409)
        try:
            await submit_answers(ctx, services, snapshot, {key: answer_of(question, form)})
        except TaskNotFound:
            return problem(404, "Not found", "No such task, or not one you may see.")
        except NeedsConfirmation:
            who = (principal.subject, self._logout_token(session))
            token = self.signin.csrf.token(session)
            return html_page(pages.confirm_page(snapshot, key, form, token, who))
        except FormProblem as err:
            return await self._on_task_page(request, session, snapshot, str(err), 400)
        except McpError as err:
            return await self._on_task_page(
                request, session, snapshot, err.message, err.http_status
            )
        except TaskError as err:
            return unavailable(err)
        return RedirectResponse(f"/inbox/tasks/{task_id}", status_code=303)

    async def _on_task_page(
        self,
        request: Request,
        session: InboxSession,
        snapshot: TaskSnapshot,
        note: str,
        status: int,
    ) -> Response:
        """The task page again, with `note` (what was wrong with the answer) on it."""
        principal = session.principal
        assert principal is not None
        body = pages.task_page(
            snapshot,
            self._now(request),
            self.signin.csrf.token(session),
            _answerable(snapshot, principal),
            (principal.subject, self._logout_token(session)),
            {},
            note,
            about=await self._about(request, snapshot),
            web_ui=self.web_ui(snapshot.task_id),
        )
        return html_page(body, status)

    # ----- events and static files ---------------------------------------------------------

    async def events(self, request: Request) -> Response:
        current = self.signin.current(request)
        if current is None or current.fresh:
            return problem(401, "Signed out", "Sign in again to follow your inbox.")
        principal = current.principal
        services = self._services(request)
        listening = services.listening
        task_id = request.query_params.get("task")
        closing: asyncio.Event = request.app.state.closing
        session = current.session

        def signed_in() -> bool:
            return self.signin.still_valid(session) is not None

        try:
            if task_id is None:
                lease = listening.slots.acquire(principal.digest)
                relist = functools.partial(self._waiting, request, principal)
                stream = list_stream(lease, listening, relist, closing, signed_in)
            else:
                snapshot = await self._task(request, principal, task_id)
                listening.check_room([task_id])
                lease = listening.slots.acquire(principal.digest)
                stream = task_stream(lease, listening, snapshot, closing, signed_in)
        except TaskNotFound:
            return problem(404, "Not found", "No such task, or not one you may see.")
        except (McpError, TaskError) as err:
            return unavailable(err)
        headers = {"X-Accel-Buffering": "no"}
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_FILES:
            return problem(404, "Not found", "No such file.")
        return FileResponse(STATIC_DIR / name, media_type=STATIC_FILES[name])


def _answerable(snapshot: TaskSnapshot, principal: Principal) -> frozenset[str]:
    """The outstanding request keys `principal` may answer (the rule of tasks/update)."""
    identity = identity_of(principal)
    return frozenset(
        key
        for key in snapshot.input_requests
        if may_answer(key, snapshot.owner, snapshot.approvers, principal.digest, identity)
    )


WebUiLink = Callable[[str], str | None]


def add_inbox_routes(app: FastAPI, signin: SignIn, web_ui: WebUiLink | None = None) -> None:
    inbox = Inbox(signin, web_ui)
    app.add_route("/inbox", inbox.home, methods=["GET"])
    app.add_route("/inbox/", inbox.home, methods=["GET"])
    app.add_route("/inbox/fragments/list", inbox.list_fragment, methods=["GET"])
    app.add_route("/inbox/tasks/{task_id}", inbox.task, methods=["GET"])
    app.add_route("/inbox/tasks/{task_id}/{part:str}", inbox.task, methods=["GET"])
    app.add_route("/inbox/tasks/{task_id}/answer", inbox.answer, methods=["POST"])
    login = Login(signin)
    app.add_route("/inbox/login", login.form, methods=["GET"])
    app.add_route("/inbox/login", login.sign_in, methods=["POST"])
    app.add_route("/inbox/logout", login.sign_out, methods=["POST"])
    app.add_route("/inbox/events", inbox.events, methods=["GET"])
    app.add_route("/inbox/static/{name}", inbox.static, methods=["GET"])
