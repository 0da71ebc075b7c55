"""One POST to `/mcp` being served (`Exchange`): its message, who sent it, and how its answer
goes back, in either era.

The answer is JSON, unless the method streams (`subscriptions/listen`) or the client accepts a
stream and the method sends messages related to the request before its result (progress, a
task's questions): then server-sent events that end with the response (sse.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcp_server.http import sse
from mcp_server.observability import record as observed
from mcp_server.protocol import dispatch
from mcp_server.protocol.core import audit
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.grants import NO_SCOPE, Grant
from mcp_server.protocol.frame.errors import McpError
from mcp_server.protocol.frame.models import error_message, result_message, to_message
from mcp_tasks.identity import NOBODY, Identity

RequestId = str | int | None


def error_response(
    error: McpError, request_id: RequestId, *, status: int | None = None
) -> Response:
    body = to_message(error_message(error, request_id))
    return JSONResponse(
        body, status_code=status or error.http_status, headers=error.headers or None
    )


@dataclass
class Exchange:
    """One POST being served: the request, its parsed message, and who sent it (what the
    authentication middleware found)."""

    request: Request
    message: dict[str, Any]
    request_id: RequestId
    principal: str
    grant: Grant = NO_SCOPE
    identity: Identity = NOBODY
    credential: tuple[str, float | None] = ("", None)

    @classmethod
    def of(cls, request: Request, message: dict[str, Any], request_id: RequestId) -> Exchange:
        state = request.state
        return cls(
            request,
            message,
            request_id,
            state.principal,
            getattr(state, "grant", NO_SCOPE),
            getattr(state, "identity", NOBODY),
            getattr(state, "credential", ("", None)),
        )

    @property
    def method(self) -> str | None:
        method = self.message.get("method")
        return method if isinstance(method, str) else None

    def accepts_stream(self) -> bool:
        return "text/event-stream" in self.request.headers.get("accept", "")

    async def answer(
        self,
        entry: dispatch.Method,
        ctx: RequestContext,
        services: Services,
        params: dict[str, Any],
        *,
        stamp: bool,
    ) -> Response:
        """Run the method and answer: JSON, or a stream. `stamp`: the result carries the
        server's info (2026-07-28). An McpError the method raises before a stream opens is
        raised here, for the era to answer."""
        if entry.stream is not None:
            stream = await dispatch.open_stream(entry, ctx, services, params)
            return sse.event_stream(sse.messages(stream))
        assert self.request_id is not None
        server_info = services.server_info if stamp else None
        if not self.accepts_stream():
            result = await dispatch.call(entry, ctx, services, params)
            return self._result(result, server_info)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        async def send(message: dict[str, Any]) -> None:
            await queue.put(message)

        streaming = ctx.streaming_to(send)
        job = asyncio.create_task(dispatch.call(entry, streaming, services, params))
        first = asyncio.create_task(queue.get())
        await asyncio.wait([job, first], return_when=asyncio.FIRST_COMPLETED)
        if job.done() and not first.done():
            first.cancel()
            return self._result(job.result(), server_info)  # raises the method's McpError
        events = sse.request_events(job, first, queue, self.request_id, server_info)
        return sse.event_stream(events)

    def _result(self, result: BaseModel, server_info: dict[str, Any] | None) -> Response:
        assert self.request_id is not None
        observed.note_created(self.request, audit.created_task_id(result))
        return JSONResponse(result_message(result, self.request_id, server_info))
