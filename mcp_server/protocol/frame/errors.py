"""JSON-RPC and MCP error codes, and the exception that carries them to the wire.

Rules implemented (wire reference §1.5, §2.12):
- -32020..-32022 are the spec's own codes; -32002 and -32042 are never emitted.
- Each code maps to the HTTP status the Streamable HTTP transport requires:
  -32601 -> 404, -32020/-32021/-32022 and missing `_meta` (-32602) -> 400.
- The task layer's errors become JSON-RPC errors here only (`from_task_error`): an unreachable
  backend is a deliberate 503 with `Retry-After` and `data.retryAfterMs`, arguments too large
  to store and a task not found are -32602, anything else the backend refuses is -32603.
"""

from __future__ import annotations

import math
from typing import Any

from mcp_server.tasks.errors import (
    ArgumentsTooLarge,
    BackendUnavailable,
    TaskError,
    TaskFailed,
    TaskFailure,
    TaskNotFound,
)

# The body is not JSON, or not strict JSON (NaN, Infinity, nesting too deep): HTTP 400.
PARSE_ERROR = -32700
# Not one JSON-RPC request (a batch, a missing `jsonrpc` or `method`): HTTP 400.
INVALID_REQUEST = -32600
# A method this server does not serve in the request's era: HTTP 404.
METHOD_NOT_FOUND = -32601
# Bad params: arguments against a tool's inputSchema, an answer against its form, a task that is
# missing, expired or someone else's (one message for all three), missing `_meta`: HTTP 400.
INVALID_PARAMS = -32602
# Something failed on this side (a task's own protocol error keeps its code): HTTP 500.
INTERNAL_ERROR = -32603
# A routing header (Mcp-Method, Mcp-Name, Mcp-Param-*) disagrees with the body: HTTP 400.
HEADER_MISMATCH = -32020
# A tool needs a client capability the request did not declare (the tasks extension,
# elicitation); `data.requiredCapabilities` names it: HTTP 400.
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
# A protocol version this server does not speak; `data.supported` lists those it does: HTTP 400.
UNSUPPORTED_PROTOCOL_VERSION = -32022
# Application codes of this server, outside JSON-RPC's reserved -32768..-32000 range.
# Too many requests of one kind from one principal (polls, answers, cancels, "not found"s,
# approver requests), answered in the shape of MCP's rate-limit draft (SEP "Standardize
# Rate-Limiting Errors") with this server's code: HTTP 429; `data.retryAfterMs` and
# `Retry-After` (whole seconds) say when to try again; `data.limit` (the bucket's burst) and
# `data.remaining` (0 when refused) match the `RateLimit-Limit` and `RateLimit-Remaining`
# headers; a refused `tasks/get` adds `data.pollIntervalMs`. The draft's -32023 is not used
# until a code is accepted: SEP-3415 claims -32023 for "not found" too, and the spec keeps
# -32020..-32099 for itself.
RATE_LIMITED = -31000
# A per-principal or per-replica ceiling is reached (open tasks, listen and session streams);
# HTTP 429 with `Retry-After`.
QUOTA_EXCEEDED = -31001
# An approver (not the owner) asked to cancel a task (MCP_TASKS_APPROVERS_MAY_CANCEL is off).
APPROVER_CANNOT_CANCEL = -31002
# A tool call named approvers its caller may not name (MCP_TASKS_APPROVER_NAMING), or itself.
APPROVERS_NOT_ALLOWED = -31003
# A client's webhook failed the verification handshake of events/subscribe, or could not be
# reached; `data.reason` says how (challenge_failed, connection_refused, timeout, tls_error,
# http_4xx, http_5xx). SEP-3415's provisional -32027 is the spec's range, not ours: HTTP 400.
CALLBACK_ENDPOINT_ERROR = -31010
# An answer to an input request by someone the request does not name as its approver (the
# task's owner included), or by an approver to a request that is the owner's to answer.
NOT_AN_APPROVER = INVALID_PARAMS
# A steer, pause or resume of a task whose tool does not take it (its tool does not declare
# `steering`, or `pausable`: `steering = true` / `pausable = true` in tools.toml): nothing is
# sent to the task, which is never paused by surprise; `data.tool` names the tool: HTTP 400.
NOT_STEERABLE = -31004
# A steer, pause or resume of a task that has ended (completed, failed or cancelled).
TASK_ENDED = INVALID_PARAMS
# A pause of a task that is already paused.
ALREADY_PAUSED = INVALID_PARAMS
# A resume of a task that is not paused.
NOT_PAUSED = INVALID_PARAMS
# An approver (not the owner) asked to steer, pause or resume a task: only its owner does.
APPROVER_CANNOT_STEER = APPROVER_CANNOT_CANCEL

_HTTP_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    METHOD_NOT_FOUND: 404,
    INVALID_PARAMS: 400,
    INTERNAL_ERROR: 500,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}

# The message every "no such task" answer uses, whether the task never existed, has passed
# its TTL, or belongs to another principal: the three must be indistinguishable.
TASK_NOT_FOUND_MESSAGE = "Failed to retrieve task: Task not found"


class McpError(Exception):
    """An error a request handler returns to the client as a JSON-RPC error object."""

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        http_status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status if http_status is not None else _HTTP_STATUS.get(code, 400)
        self.headers = headers or {}


def invalid_params(message: str, data: Any = None) -> McpError:
    return McpError(INVALID_PARAMS, message, data)


def task_not_found() -> McpError:
    return McpError(INVALID_PARAMS, TASK_NOT_FOUND_MESSAGE)


def missing_capability(required: dict[str, Any], what: str) -> McpError:
    return McpError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {what}",
        {"requiredCapabilities": required},
    )


def failure_error(failure: TaskFailure) -> McpError:
    """The JSON-RPC error of a failed task: its tool's own, else an internal error."""
    code = INTERNAL_ERROR if failure.code is None else failure.code
    return McpError(code, failure.message, failure.data)


def error_object(failure: TaskFailure) -> dict[str, Any]:
    """A failed task's JSON-RPC error object (`code`, `message`, `data` when it has one)."""
    error = failure_error(failure)
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return body


def from_task_error(err: TaskError) -> McpError:
    """The JSON-RPC error a client receives for an error of the task layer."""
    if isinstance(err, TaskNotFound):
        return task_not_found()
    if isinstance(err, ArgumentsTooLarge):
        return invalid_params(str(err))
    if isinstance(err, TaskFailed):
        return failure_error(TaskFailure(err.message, err.code, err.data))
    if isinstance(err, BackendUnavailable):
        # A deliberate 503 the client may retry.
        retry_after_s = math.ceil(err.retry_after_s)
        return McpError(
            INTERNAL_ERROR,
            str(err),
            {"retryAfterMs": int(err.retry_after_s * 1000)},
            http_status=503,
            headers={"Retry-After": str(retry_after_s)},
        )
    # BackendRefused, or an error this mapping does not know yet: the server's fault.
    return McpError(INTERNAL_ERROR, str(err))
