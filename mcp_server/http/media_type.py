"""The one media type a `POST /mcp` body may declare, parsed exactly (RFC 9110 §8.3.1).

Rules implemented:
- `Content-Type` is `application/json` (case-insensitive), optionally with parameters, each
  `name=value` (a token, or a quoted string); `charset`, when given, is `utf-8` (RFC 8259: JSON
  between systems is UTF-8).
- Anything else is refused, whatever it contains: `application/jsonx`, `text/plain;
  application/json`, `application/json, text/plain`, a malformed parameter, and a request with
  two Content-Type headers (which one would the body follow?). The caller answers the existing
  415 "Content-Type must be application/json".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_QUOTED = r'"(?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\[\x09\x20-\x7e\x80-\xff])*"'
_PARAMETER = re.compile(rf"[ \t]*;[ \t]*({_TOKEN})=({_TOKEN}|{_QUOTED})")
_TYPE = re.compile(rf"[ \t]*({_TOKEN})/({_TOKEN})")


def parse(value: str) -> tuple[str, dict[str, str]] | None:
    """(type/subtype lower-cased, parameters by lower-cased name), or None when `value` is
    not one well-formed media type."""
    matched = _TYPE.match(value)
    if matched is None:
        return None
    media_type = f"{matched[1]}/{matched[2]}".lower()
    parameters: dict[str, str] = {}
    position = matched.end()
    while position < len(value.rstrip(" \t")):
        parameter = _PARAMETER.match(value, position)
        if parameter is None:
            return None
        raw = parameter[2]
        unquoted = re.sub(r"\\(.)", r"\1", raw[1:-1]) if raw.startswith('"') else raw
        parameters[parameter[1].lower()] = unquoted
        position = parameter.end()
    return media_type, parameters


def is_json(values: Sequence[str]) -> bool:
    """Whether the request's Content-Type header values declare exactly one JSON body."""
    if len(values) != 1:
        return False
    parsed = parse(values[0])
    if parsed is None or parsed[0] != "application/json":
        return False
    charset = parsed[1].get("charset")
    return charset is None or charset.lower() == "utf-8"
