"""Checks of what a request's client capabilities allow (wire §1.2, §1.6).

Per-request capabilities are authoritative at 2026-07-28: nothing is remembered from earlier
requests. What a tool or method needs is written as a `ClientCapabilities` object (e.g.
`{"elicitation": {}}`); what is missing becomes -32021 with exactly that part in
`data.requiredCapabilities`. `elicitation: {}` declares form mode only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as core

from mcp_server.protocol.frame.errors import missing_capability
from mcp_server.protocol.frame.wire import TASKS_EXTENSION

_CAPABILITY_OF_INPUT = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


Declared = core.ClientCapabilities | dict[str, Any]


def _declared(capabilities: Declared) -> dict[str, Any]:
    if isinstance(capabilities, dict):
        return capabilities
    return capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)


def missing(declared: Declared, required: dict[str, Any]) -> dict[str, Any]:
    """The part of `required` that `declared` does not cover ({} when all is there)."""
    have_all = _declared(declared)
    absent: dict[str, Any] = {}
    for key, need in required.items():
        have = have_all.get(key)
        if not isinstance(have, dict):
            absent[key] = need
            continue
        if key == "extensions":
            lacking = {ext: v for ext, v in need.items() if not isinstance(have.get(ext), dict)}
            if lacking:
                absent[key] = lacking
        elif key == "elicitation":
            modes = set(have) or {"form"}
            lacking_modes: dict[str, Any] = {m: {} for m in need if m not in modes}
            if lacking_modes:
                absent[key] = lacking_modes
    return absent


def require(declared: Declared, required: dict[str, Any], why: str) -> None:
    lacking = missing(declared, required)
    if lacking:
        raise missing_capability(lacking, why)


def declares_tasks(declared: core.ClientCapabilities) -> bool:
    return bool(declared.extensions) and TASKS_EXTENSION in (declared.extensions or {})


def required_for_input(request: Mapping[str, Any]) -> dict[str, Any]:
    """The client capability an input request needs, e.g. {"elicitation": {}}."""
    method = request.get("method")
    capability = _CAPABILITY_OF_INPUT.get(str(method))
    if capability is None:
        raise ValueError(f"unsupported input request method {method!r}")
    if capability == "elicitation":
        mode = (request.get("params") or {}).get("mode", "form")
        return {"elicitation": {mode: {}}} if mode == "url" else {"elicitation": {}}
    return {capability: {}}
