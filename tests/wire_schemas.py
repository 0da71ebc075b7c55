"""Validation of every server response against the official JSON Schemas (tests/schemas/)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMAS = Path(__file__).parent / "schemas"
CORE = "mcp-2026-07-28.schema.json"
TASKS = "ext-tasks.schema.json"

_ERROR_DEFS = {
    -32700: "ParseError",
    -32600: "InvalidRequestError",
    -32601: "MethodNotFoundError",
    -32602: "InvalidParamsError",
    -32603: "InternalError",
}
# These three are defined as whole error responses, the others as error objects.
_RESPONSE_DEFS = {
    -32020: "HeaderMismatchError",
    -32021: "MissingRequiredClientCapabilityError",
    -32022: "UnsupportedProtocolVersionError",
}


@cache
def _validator(document: str, definition: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / document).read_text())
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]})


def result_definition(method: str, result: dict[str, Any]) -> tuple[str, str]:
    kind = result.get("resultType")
    if method == "tools/call":
        if kind == "task":
            return TASKS, "CreateTaskResult"
        if kind == "input_required":
            return CORE, "InputRequiredResult"
        return CORE, "CallToolResult"
    return {
        "server/discover": (CORE, "DiscoverResult"),
        "tools/list": (CORE, "ListToolsResult"),
        "tasks/get": (TASKS, "GetTaskResult"),
        "tasks/update": (TASKS, "UpdateTaskResult"),
        "tasks/cancel": (TASKS, "CancelTaskResult"),
        # The events extension (SEP-3415) has no published schema yet: a core Result here,
        # its own pydantic models (mcp_server/protocol/events/models.py) on the server.
        "events/list": (CORE, "Result"),
        "events/subscribe": (CORE, "Result"),
        "events/unsubscribe": (CORE, "Result"),
        # This server's steering extension (its draft, seps/0000-task-interaction.md, has no
        # published schema): steer acks like tasks/update, pause and resume answer a task.
        "mcp-tasks-temporal/steer": (TASKS, "UpdateTaskResult"),
        "mcp-tasks-temporal/pause": (TASKS, "GetTaskResult"),
        "mcp-tasks-temporal/resume": (TASKS, "GetTaskResult"),
        # This server's additions (docs/guides/events.md): no schema anywhere.
        "events/subscriptions/list": (CORE, "Result"),
        "events/subscriptions/remove": (CORE, "Result"),
    }[method]


def _as_published(task: dict[str, Any]) -> dict[str, Any]:
    """The draft's PausedTask is a Task with status `paused` (shown only to a client that
    declared the steering extension): checked as the schema's Task it extends."""
    return {**task, "status": "working"} if task.get("status") == "paused" else task


_NOTIFICATION_DEFS = {
    "notifications/subscriptions/acknowledged": (CORE, "SubscriptionsAcknowledgedNotification"),
    "notifications/tools/list_changed": (CORE, "ToolListChangedNotification"),
    "notifications/tasks": (TASKS, "TaskStatusNotification"),
}


def assert_valid_stream_message(message: Any) -> None:
    """A message of a subscriptions/listen stream: a notification or the final response."""
    if "method" in message:
        document, definition = _NOTIFICATION_DEFS[message["method"]]
        if message["method"] == "notifications/tasks":
            message = {**message, "params": _as_published(message["params"])}
        _check(document, definition, message)
    else:
        _check(CORE, "SubscriptionsListenResultResponse", message)


def assert_valid(method: str, body: Any) -> None:
    """Raise AssertionError when `body` (a JSON-RPC response) breaks the official schemas."""
    if "error" in body:
        code = body["error"].get("code")
        if code in _RESPONSE_DEFS:
            _check(CORE, _RESPONSE_DEFS[code], body)
        else:
            _check(CORE, "JSONRPCErrorResponse", body)
            if code in _ERROR_DEFS:
                _check(CORE, _ERROR_DEFS[code], body["error"])
        return
    _check(CORE, "JSONRPCResultResponse", body)
    document, definition = result_definition(method, body["result"])
    _check(document, definition, _as_published(body["result"]))


def _check(document: str, definition: str, instance: Any) -> None:
    errors = list(_validator(document, definition).iter_errors(instance))
    assert not errors, f"response is not a valid {definition}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]
    )


LEGACY = "mcp-2025-11-25.schema.json"
_LEGACY_RESULTS = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tasks/get": "GetTaskResult",
    "tasks/list": "ListTasksResult",
    "tasks/cancel": "CancelTaskResult",
}
_LEGACY_MESSAGES = {
    "elicitation/create": "ElicitRequest",
    "sampling/createMessage": "CreateMessageRequest",
    "roots/list": "ListRootsRequest",
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
}


def assert_valid_legacy(message: Any, method: str | None = None) -> None:
    """A message of the 2025-11-25 era: a response (to `method`, when known) or a request or
    notification the server sent on a response stream."""
    if "method" in message:
        _check(LEGACY, _LEGACY_MESSAGES[message["method"]], message)
        return
    if "error" in message:
        _check(LEGACY, "JSONRPCErrorResponse", message)
        return
    _check(LEGACY, "JSONRPCResultResponse", message)
    result = message["result"]
    if method == "tools/call":
        definition = "CreateTaskResult" if "task" in result else "CallToolResult"
        _check(LEGACY, definition, result)
    elif method in _LEGACY_RESULTS:
        _check(LEGACY, _LEGACY_RESULTS[method], result)
