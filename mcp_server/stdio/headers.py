"""stdio has no header layer (wire §1.8): the routing headers that HTTP checks against the body
are, here, read from the body itself, so every such check holds by construction.

Handlers only ever look at `Mcp-Param-{X}` (the mirror of a `tools/call` argument annotated
`x-mcp-header`); this is its value as a client would have sent it (base64 for strings, so any
string round-trips exactly).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from mcp_server.protocol.frame.routing_headers import header_params
from mcp_server.tools.registry import ToolRegistry


class BodyHeaders:
    """A `HeaderSource` holding exactly the headers an HTTP client would derive from the body."""

    def __init__(self, values: dict[str, str] | None = None) -> None:
        self._values = {name.lower(): value for name, value in (values or {}).items()}

    def getlist(self, key: str) -> Sequence[str]:
        value = self._values.get(key.lower())
        return [] if value is None else [value]


def _header_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return f"=?base64?{base64.b64encode(value.encode()).decode()}?="
    return None  # objects and arrays cannot travel in a header: the check reports the argument


def body_headers(registry: ToolRegistry, method: str, params: dict[str, Any]) -> BodyHeaders:
    if method != "tools/call":
        return BodyHeaders()
    name = params.get("name")
    tool = registry.get(name) if isinstance(name, str) else None
    arguments = params.get("arguments")
    if tool is None or not isinstance(arguments, dict):
        return BodyHeaders()
    values: dict[str, str] = {}
    for argument, suffix in header_params(tool.input_schema).items():
        value = _header_value(arguments.get(argument))
        if value is not None:
            values[f"mcp-param-{suffix}"] = value
    return BodyHeaders(values)
