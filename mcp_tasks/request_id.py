"""The id of the HTTP request being served: the `X-Request-Id` the client sent (when sane) or
the one the server made, set by http/middleware.py's RequestIdMiddleware for the time the
request is served. The request line, the audit line and every other line logged meanwhile
carry it as `requestId`; it is None outside an HTTP request (stdio, the worker).

A leaf module (it imports nothing of this project), so the protocol layer's audit and the log
formatter read the same variable the HTTP middleware sets.
"""

from __future__ import annotations

from contextvars import ContextVar

HTTP_REQUEST_ID: ContextVar[str | None] = ContextVar("mcp_http_request_id", default=None)
