"""One JSON-RPC message as every transport (Streamable HTTP, stdio) reads it, and its era.

Rules implemented:
- JSON that does not parse, or is not strict JSON (`NaN`, `Infinity`, a number beyond a float):
  -32700. Nesting deeper than `strict_json.MAX_DEPTH` (64) arrays and objects: -32602 naming the
  limit, before anything reads the message. Not one object (a batch, a scalar), `jsonrpc` not "2.0",
  an id that is neither a string nor an integer (MCP never allows null), a method that is not a
  string: -32600. So is an id longer than `MAX_ID_CHARS` (JSON-RPC sets no bound; no client
  needs more, and the id is echoed, audited and carried into the task's history).
- `params` is an object when present (null counts as absent): -32602.
- The era is read from the message itself: one whose `params._meta` names a protocolVersion is
  2026-07-28 (even an `initialize`, which is then an unknown method).
- A 2026-07-28 request names a version this server speaks: -32022 with `data.supported` and
  `data.requested`, the handshake versions named in the message for clients that can fall back.
"""

from __future__ import annotations

from typing import Any

from mcp_server.protocol.frame import strict_json
from mcp_server.protocol.frame.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
)
from mcp_server.protocol.frame.wire import (
    HANDSHAKE_VERSIONS,
    META_PROTOCOL_VERSION,
    SUPPORTED_VERSIONS,
)

RequestId = str | int | None
MAX_ID_CHARS = 256


def parse_envelope(body: bytes | str) -> tuple[dict[str, Any], RequestId]:
    """The message and its id (None for a notification, or an id that cannot be used)."""
    try:
        message = strict_json.loads(body)
    except strict_json.TooDeep as exc:
        raise McpError(
            INVALID_PARAMS, f"The message is {exc}: send flatter arguments", {"maxDepth": exc.limit}
        ) from None
    except strict_json.NotStrictJson as exc:
        raise McpError(PARSE_ERROR, f"Parse error: {exc}") from None
    if isinstance(message, list):
        raise McpError(INVALID_REQUEST, "Batches are not supported: send one message at a time")
    if not isinstance(message, dict):
        raise McpError(INVALID_REQUEST, "A JSON-RPC message must be an object")
    request_id = message.get("id")
    valid_id = isinstance(request_id, str | int) and not isinstance(request_id, bool)
    if "id" in message and not valid_id:
        raise McpError(INVALID_REQUEST, "The request id must be a string or an integer")
    if valid_id and len(str(request_id)) > MAX_ID_CHARS:
        raise McpError(INVALID_REQUEST, f"The request id is longer than {MAX_ID_CHARS} characters")
    if message.get("jsonrpc") != "2.0":
        raise McpError(INVALID_REQUEST, 'jsonrpc must be "2.0"')
    if "method" in message and not isinstance(message["method"], str):
        raise McpError(INVALID_REQUEST, "method must be a string")
    return message, request_id if valid_id else None


def params_of(message: dict[str, Any]) -> dict[str, Any]:
    params = message.get("params", {})
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise McpError(INVALID_PARAMS, "params must be an object")
    return params


def names_protocol_version(message: dict[str, Any]) -> bool:
    """Whether the message is of the 2026-07-28 era: its `params._meta` names a version."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


def require_supported_version(version: str) -> None:
    if version not in SUPPORTED_VERSIONS:
        raise McpError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version {version!r}; this server supports "
            f"{', '.join(SUPPORTED_VERSIONS)} (and {', '.join(HANDSHAKE_VERSIONS)} through "
            "initialize)",
            {"supported": list(SUPPORTED_VERSIONS), "requested": version},
        )
