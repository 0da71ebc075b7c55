"""An elicitation answer checked against the form that asked for it (its `requestedSchema`).

Pure and small: the schema is MCP's restricted subset (2025-11-25 and 2026-07-28
`ElicitRequestFormParams.requestedSchema`): an object whose properties are primitives:
- `string`, with `minLength`, `maxLength`, `format` (date, date-time, email, uri), and the
  single-select enums (`enum`, titled `oneOf: [{const, title}]`, legacy `enumNames`);
- `number` / `integer`, with `minimum` and `maximum`; never NaN or an infinity (JSON has
  neither, and NaN compares false with every bound, so it would pass any `maximum`);
- `boolean`;
- `array` multi-select enums (`items.enum` or titled `items.anyOf`), `minItems`, `maxItems`;
and `required`. Only `accept` answers carry content; decline and cancel are never checked.
Fields the form does not define are left alone, but no value anywhere in an answer may be NaN
or an infinity; a property whose schema is outside the subset is not checked (the server never
refuses what it cannot judge). Every path that delivers an answer (tasks/update, task_respond,
MRTR rounds, 2025-11-25 elicitation results, the inbox's forms, `mcp-tasks tasks answer`) checks
it here, through `check_input_response` (protocol/frame/models.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def json_type(value: object) -> str:
    """The JSON type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def form_problem(schema: Mapping[str, Any], content: object) -> str | None:
    """What is wrong with `content` as an answer to the form `schema`, or None when it fits.

    E.g. `field "approve" must be a boolean, got string`."""
    if content is None:
        content = {}
    if not isinstance(content, dict):
        return f"content must be an object, got {json_type(content)}"
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name not in content:
            return f'field "{name}" is required'
    for name, value in content.items():
        field = properties.get(name)
        problem = _field_problem(field, value) if isinstance(field, dict) else None
        if problem is None and not _finite(value):
            problem = "must hold only finite numbers (no NaN or infinity)"
        if problem is not None:
            return f'field "{name}" {problem}'
    return None


def _finite(value: object) -> bool:
    """Whether no number in `value` (nested arrays and objects too) is NaN or infinite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(item) for item in value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    return True


def _field_problem(field: Mapping[str, Any], value: object) -> str | None:
    kind = field.get("type")
    if kind == "string":
        return _string_problem(field, value)
    if kind in ("number", "integer"):
        return _number_problem(field, value, integer=kind == "integer")
    if kind == "boolean":
        return None if isinstance(value, bool) else f"must be a boolean, got {json_type(value)}"
    if kind == "array":
        return _array_problem(field, value)
    return None


def _choices(field: Mapping[str, Any], titled_key: str) -> list[str] | None:
    """The allowed values of an enum: `enum`, or the `const`s of a titled list."""
    if isinstance(field.get("enum"), list):
        return [str(v) for v in field["enum"]]
    titled = field.get(titled_key)
    if isinstance(titled, list):
        return [str(o["const"]) for o in titled if isinstance(o, dict) and "const" in o]
    return None


def _one_of(choices: list[str]) -> str:
    return ", ".join(f'"{c}"' for c in choices)


def _string_problem(field: Mapping[str, Any], value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, got {json_type(value)}"
    choices = _choices(field, "oneOf")
    if choices is not None and value not in choices:
        return f'must be one of {_one_of(choices)}, got "{value}"'
    low, high = field.get("minLength"), field.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        return f"must be at least {low} characters long, got {len(value)}"
    if isinstance(high, int) and len(value) > high:
        return f"must be at most {high} characters long, got {len(value)}"
    form = field.get("format")
    if isinstance(form, str) and not _has_format(value, form):
        return f"must be a {form}, got {value[:80]!r}"
    return None


def _has_format(value: str, form: str) -> bool:
    try:
        if form == "date":
            return bool(_DATE.match(value)) and date.fromisoformat(value) is not None
        if form == "date-time":
            return bool(_DATE_TIME.match(value)) and datetime.fromisoformat(value) is not None
    except ValueError:
        return False
    if form == "email":
        return bool(_EMAIL.match(value))
    if form == "uri":
        return bool(_URI.match(value))
    return True  # a format outside the subset is not checked


def _number_problem(field: Mapping[str, Any], value: object, *, integer: bool) -> str | None:
    wanted = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be {wanted}, got {json_type(value)}"
    if not math.isfinite(value):
        return f"must be a finite number, got {value}"
    if integer and not (isinstance(value, int) or value.is_integer()):
        return f"must be an integer, got {value}"
    low, high = _bound(field.get("minimum")), _bound(field.get("maximum"))
    if low is not None and value < low:
        return f"must be at least {low}, got {value}"
    if high is not None and value > high:
        return f"must be at most {high}, got {value}"
    return None


def _bound(value: object) -> int | float | None:
    """A `minimum`/`maximum` that is a number, else None (not checked)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _array_problem(field: Mapping[str, Any], value: object) -> str | None:
    if not isinstance(value, list):
        return f"must be an array, got {json_type(value)}"
    items = field.get("items")
    choices = _choices(items, "anyOf") if isinstance(items, dict) else None
    for item in value:
        if not isinstance(item, str):
            return f"must be an array of strings, got an item of type {json_type(item)}"
        if choices is not None and item not in choices:
            return f'may only contain {_one_of(choices)}, got "{item}"'
    low, high = field.get("minItems"), field.get("maxItems")
    if isinstance(low, int) and len(value) < low:
        return f"must have at least {low} items, got {len(value)}"
    if isinstance(high, int) and len(value) > high:
        return f"must have at most {high} items, got {len(value)}"
    return None


def answer_problem(request: Mapping[str, Any], response: Mapping[str, Any]) -> str | None:
    """What is wrong with `response` as the answer to the input request `request` (any
    method), judged against its form; None when it fits or there is no form to judge by."""
    if request.get("method") != "elicitation/create" or response.get("action") != "accept":
        return None
    params = request.get("params")
    if not isinstance(params, dict) or params.get("mode", "form") != "form":
        return None
    schema = params.get("requestedSchema")
    if not isinstance(schema, dict):
        return None
    return form_problem(schema, response.get("content"))
