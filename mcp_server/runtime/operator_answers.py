"""The answer `mcp-tasks tasks answer` sends: built from `--set field=value` / `--json`, or
asked field by field on a terminal, then checked exactly as `tasks/update` checks it
(`check_input_response`, protocol/frame/models.py and protocol/frame/answer_schema.py).

A `--set` value is read as its form field's type says (numbers parsed, booleans
true/false/yes/no, a multi-select as comma-separated values); a field the form does not have is
refused, naming the fields it has. Every refusal is an `InvalidAnswer` naming the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from mcp_server.protocol.frame.answer_schema import form_problem
from mcp_server.protocol.frame.errors import McpError
from mcp_server.protocol.frame.models import check_input_response

Ask = Callable[[str], str]
Say = Callable[[str], None]
_YES = {"y", "yes", "true", "1", "on"}
_NO = {"n", "no", "false", "0", "off"}


class InvalidAnswer(ValueError):
    """An answer that cannot be sent; the message names the field."""


ACTION_PROMPT = "accept or decline? (accept/y, decline/n) [accept]: "
_ACTIONS = {
    **dict.fromkeys(("accept", "a", "y", "yes"), "accept"),
    **dict.fromkeys(("decline", "d", "n", "no"), "decline"),
}


def action_of(raw: str) -> str | None:
    """The action a typed reply to `ACTION_PROMPT` means (empty: accept), None when unclear."""
    return _ACTIONS.get(raw.strip().lower() or "accept")


def form_of(request: Mapping[str, Any]) -> dict[str, Any] | None:
    """The requestedSchema of a form elicitation, None for any other input request."""
    params = request.get("params")
    if request.get("method") != "elicitation/create" or not isinstance(params, dict):
        return None
    if params.get("mode", "form") != "form":
        return None
    schema = params.get("requestedSchema")
    return schema if isinstance(schema, dict) else {"type": "object", "properties": {}}


def _properties(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {name: f for name, f in properties.items() if isinstance(f, dict)}


def _required(schema: Mapping[str, Any]) -> list[str]:
    required = schema.get("required")
    if not isinstance(required, list):
        return []
    return [name for name in required if isinstance(name, str)]


def parse_value(name: str, field: Mapping[str, Any], raw: str) -> Any:
    """`raw` as the value of form field `name`, read as its type says."""
    kind = field.get("type")
    if kind == "boolean":
        word = raw.strip().lower()
        if word in _YES | _NO:
            return word in _YES
        raise InvalidAnswer(f'field "{name}" must be a boolean (yes/no, true/false), got {raw!r}')
    if kind in ("integer", "number"):
        try:
            number = float(raw)
            if not math.isfinite(number):
                raise ValueError(raw)
        except ValueError:
            wanted = "an integer" if kind == "integer" else "a number"
            raise InvalidAnswer(f'field "{name}" must be {wanted}, got {raw!r}') from None
        return int(number) if number.is_integer() and "." not in raw else number
    if kind == "array":
        return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


def content_from_flags(
    schema: Mapping[str, Any], assignments: list[str], json_content: str | None
) -> dict[str, Any]:
    """The content of an accepted form answer: `--json` (an object), then each `--set`."""
    content: dict[str, Any] = {}
    if json_content is not None:
        try:
            given = json.loads(json_content)  # NaN and Infinity are refused by `checked`
        except ValueError as err:
            raise InvalidAnswer(f"--json is not JSON: {err}") from None
        if not isinstance(given, dict):
            raise InvalidAnswer("--json must be a JSON object (the form's fields)")
        content.update(given)
    properties = _properties(schema)
    for assignment in assignments:
        name, sep, raw = assignment.partition("=")
        if not sep or not name:
            raise InvalidAnswer(f"--set {assignment!r}: expected field=value")
        if name not in properties:
            known = ", ".join(properties) or "none"
            raise InvalidAnswer(f'field "{name}" is not in the form (its fields: {known})')
        content[name] = parse_value(name, properties[name], raw)
    return content


def _choices(field: Mapping[str, Any]) -> list[str]:
    if isinstance(field.get("enum"), list):
        return [str(choice) for choice in field["enum"]]
    titled = field.get("oneOf")
    if isinstance(titled, list):
        return [str(o["const"]) for o in titled if isinstance(o, dict) and "const" in o]
    return []


def _prompt_text(name: str, field: Mapping[str, Any], required: bool, choices: list[str]) -> str:
    label = str(field.get("title") or name)
    text = f"{label} ({name}"
    if choices:
        text += ": " + ", ".join(f"{n}={c}" for n, c in enumerate(choices, 1))
    elif field.get("type") == "boolean":
        text += ": y/n"
    elif field.get("type") in ("integer", "number", "array"):
        text += f": {field['type']}"
    text += ", required)" if required else ")"
    if "default" in field:
        text += f" [{json.dumps(field['default'])}]"
    return text + ": "


def _ask_field(name: str, field: Mapping[str, Any], required: bool, ask: Ask, say: Say) -> Any:
    """One field's value, asked until it fits the field; absent (None) when skipped."""
    choices = _choices(field)
    if field.get("description"):
        say(f"  {field['description']}")
    while True:
        raw = ask(_prompt_text(name, field, required, choices)).strip()
        if not raw:
            if "default" in field:
                return field["default"]
            if not required:
                return None
            say(f'  "{name}" is required')
            continue
        if choices and raw not in choices and raw.isdigit() and 1 <= int(raw) <= len(choices):
            raw = choices[int(raw) - 1]
        try:
            value = parse_value(name, field, raw)
        except InvalidAnswer as err:
            say(f"  {err}")
            continue
        problem = form_problem({"properties": {name: field}}, {name: value})
        if problem is None:
            return value
        say(f"  {problem}")


def content_from_prompts(schema: Mapping[str, Any], ask: Ask, say: Say) -> dict[str, Any]:
    """The content of an accepted form answer, asked on the terminal field by field."""
    required = _required(schema)
    content: dict[str, Any] = {}
    for name, field in _properties(schema).items():
        value = _ask_field(name, field, name in required, ask, say)
        if value is not None:
            content[name] = value
    return content


def checked(key: str, request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """`response` when tasks/update would deliver it as the answer to `request`."""
    error: McpError | None = check_input_response(key, request, response)
    if error is not None:
        raise InvalidAnswer(f"invalid answer: {error.message}")
    return response
