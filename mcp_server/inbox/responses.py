"""The inbox's responses that are not pages of their own: HTML, the error page, the refusal of
a form without its session's CSRF token (403), and a refusal or a backend that cannot answer
(its status and Retry-After: a stream limit is 429, Temporal unreachable 503)."""

from __future__ import annotations

from starlette.responses import HTMLResponse

from mcp_server.inbox import pages
from mcp_server.protocol.frame.errors import McpError, from_task_error
from mcp_server.tasks.errors import TaskError


def html_page(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status)


def problem(status: int, title: str, message: str) -> HTMLResponse:
    return html_page(pages.error_page(title, message), status)


def forged() -> HTMLResponse:
    return problem(
        403,
        "Refused",
        "This form did not come from your inbox session (its security token is missing or "
        "wrong). Reload the page and try again.",
    )


def unavailable(err: McpError | TaskError) -> HTMLResponse:
    error = from_task_error(err) if isinstance(err, TaskError) else err
    status = error.http_status if error.http_status >= 400 else 503
    response = problem(status, "Unavailable", error.message)
    if "Retry-After" in error.headers:
        response.headers["Retry-After"] = error.headers["Retry-After"]
    return response
