"""Validation of the Streamable HTTP routing headers against the JSON-RPC body.

Rules implemented (wire reference §1.8, §2.10; SEP-2243):
- `Mcp-Method` is required on every request and must equal the body's `method` exactly
  (header names are case-insensitive, values are not).
- `MCP-Protocol-Version` is required on every POST and must equal `_meta`'s protocolVersion.
- `Mcp-Name` must equal `params.name` (tools/call, prompts/get), `params.uri`
  (resources/read) or `params.taskId` (tasks/get, tasks/update, tasks/cancel). On the three
  tasks methods a missing `Mcp-Name` is accepted (the official Python SDK and fastmcp clients
  do not send it there); a mismatched one is still refused.
- `Mcp-Param-{X}` must mirror each `tools/call` argument annotated `x-mcp-header: "X"`
  whenever that argument is present and not null; integers compare numerically.
- Optional whitespace around a value is dropped; `=?base64?...?=` values are decoded strictly
  (bad padding or alphabet is a mismatch); anything else is taken literally.
- A duplicated routing header is a mismatch: one request has one method and one name.
Every failure is -32020 (HeaderMismatch) with HTTP 400.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mcp_server.protocol.frame.errors import HEADER_MISMATCH, McpError

_BASE64_SENTINEL = re.compile(r"^=\?base64\?(.*)\?=$", re.DOTALL)
_OWS = " \t"


class HeaderSource(Protocol):
    def getlist(self, key: str) -> Sequence[str]: ...


def mismatch(message: str) -> McpError:
    return McpError(HEADER_MISMATCH, f"Header mismatch: {message}")


def decode_value(raw: str, header: str) -> str:
    value = raw.strip(_OWS)
    match = _BASE64_SENTINEL.match(value)
    if not match:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise mismatch(f"{header} carries an invalid base64 value") from exc


def single(headers: HeaderSource, name: str) -> str | None:
    values = headers.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise mismatch(f"{name} was sent {len(values)} times")
    return decode_value(values[0], name)


def check_method(headers: HeaderSource, method: str) -> None:
    value = single(headers, "mcp-method")
    if value is None:
        raise mismatch("the Mcp-Method header is required")
    if value != method:
        raise mismatch(f"Mcp-Method {value!r} does not match the body method {method!r}")


def check_protocol_version(headers: HeaderSource, meta_version: str) -> None:
    value = single(headers, "mcp-protocol-version")
    if value is None:
        raise mismatch("the MCP-Protocol-Version header is required")
    if value != meta_version:
        raise mismatch(
            f"MCP-Protocol-Version {value!r} does not match _meta protocolVersion {meta_version!r}"
        )


def check_name(
    headers: HeaderSource, field: str | None, method: str, params: Mapping[str, Any]
) -> None:
    """`field` is the param the method routes in Mcp-Name (its dispatch-table entry says)."""
    if field is None:
        return
    body_value = params.get(field)
    value = single(headers, "mcp-name")
    if not isinstance(body_value, str):
        return  # the handler reports the malformed params (-32602)
    if value is None:
        if method.startswith("tasks/"):
            return  # tolerated: widely used clients omit it on tasks/* (see above)
        raise mismatch(f"the Mcp-Name header is required for {method}")
    if value != body_value:
        raise mismatch(f"Mcp-Name {value!r} does not match params.{field} {body_value!r}")


def header_params(input_schema: Mapping[str, Any]) -> dict[str, str]:
    """Argument name -> header suffix, for every property annotated with `x-mcp-header`."""
    properties = input_schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {
        name: prop["x-mcp-header"]
        for name, prop in properties.items()
        if isinstance(prop, dict) and isinstance(prop.get("x-mcp-header"), str)
    }


def _same(header_value: str, body_value: Any) -> bool:
    if isinstance(body_value, bool):
        return header_value == ("true" if body_value else "false")
    if isinstance(body_value, int | float):
        try:
            return float(header_value) == float(body_value)
        except ValueError:
            return False
    return isinstance(body_value, str) and header_value == body_value


def check_param_headers(
    headers: HeaderSource, mapping: Mapping[str, str], arguments: Mapping[str, Any]
) -> None:
    for argument, suffix in mapping.items():
        header = f"mcp-param-{suffix.lower()}"
        value = single(headers, header)
        body_value = arguments.get(argument)
        if body_value is None:
            if value is not None:
                raise mismatch(f"Mcp-Param-{suffix} is set but argument {argument!r} is absent")
            continue
        if value is None:
            raise mismatch(f"Mcp-Param-{suffix} is required when argument {argument!r} is set")
        if not _same(value, body_value):
            raise mismatch(f"Mcp-Param-{suffix} does not match argument {argument!r}")
