"""Checks of what a request's client capabilities allow (wire §1.2, §1.6).

Per-request capabilities are authoritative: nothing is remembered from earlier requests.
"""

from __future__ import annotations

from typing import Any

from mcp_server.protocol.errors import McpError, invalid_params, missing_capability

_CAPABILITY_OF_INPUT = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
_ELICIT_ACTIONS = ("accept", "decline", "cancel")


def missing(declared: dict[str, Any], required: dict[str, Any]) -> dict[str, Any]:
    """The part of `required` that `declared` does not cover ({} when all is there)."""
    absent: dict[str, Any] = {}
    for key, need in required.items():
        have = declared.get(key)
        if not isinstance(have, dict):
            absent[key] = need
            continue
        if key == "extensions":
            lacking = {ext: v for ext, v in need.items() if not isinstance(have.get(ext), dict)}
            if lacking:
                absent[key] = lacking
        elif key == "elicitation":
            # `elicitation: {}` declares form mode only.
            modes = set(have) or {"form"}
            lacking_modes: dict[str, Any] = {m: {} for m in need if m not in modes}
            if lacking_modes:
                absent[key] = lacking_modes
    return absent


def require(declared: dict[str, Any], required: dict[str, Any], why: str) -> None:
    lacking = missing(declared, required)
    if lacking:
        raise missing_capability(lacking, why)


def required_for_input(request: dict[str, Any]) -> dict[str, Any]:
    """The client capability an input request needs, e.g. {"elicitation": {}}."""
    method = request.get("method")
    capability = _CAPABILITY_OF_INPUT.get(str(method))
    if capability is None:
        raise ValueError(f"unsupported input request method {method!r}")
    if capability == "elicitation":
        mode = (request.get("params") or {}).get("mode", "form")
        return {"elicitation": {mode: {}}} if mode == "url" else {"elicitation": {}}
    return {capability: {}}


def check_input_response(key: str, request: dict[str, Any], response: Any) -> McpError | None:
    """A -32602 error when `response` is not a valid answer to `request`, else None."""
    where = f"inputResponses[{key!r}]"
    if not isinstance(response, dict):
        return invalid_params(f"{where} must be an object")
    method = request.get("method")
    if method == "elicitation/create":
        if response.get("action") not in _ELICIT_ACTIONS:
            return invalid_params(f"{where}.action must be one of {list(_ELICIT_ACTIONS)}")
        content = response.get("content")
        if content is not None and not isinstance(content, dict):
            return invalid_params(f"{where}.content must be an object")
    elif method == "sampling/createMessage":
        if not isinstance(response.get("content"), dict | list) or "role" not in response:
            return invalid_params(f"{where} must be a CreateMessageResult (role, content, model)")
    elif method == "roots/list" and not isinstance(response.get("roots"), list):
        return invalid_params(f"{where}.roots must be an array")
    return None
