"""An elicitation form from its `requestedSchema`, and the submitted form back as an answer.

Rendering (templates/_fields.html and _request.html draw what is read here): strings (with
enum / oneOf titles: a select; minLength/maxLength; format email, uri, date), numbers and
integers (minimum/maximum), booleans (a checkbox), arrays of enum values (a multiple select);
`required`, `default`, `title` as the label and `description` as help text. An approval (one
required boolean, approval.py) is two buttons instead of its checkbox. A form posts `action`
(its button) and `confirm`: Reject and Decline end the task (a deploy rolls back), so they are
taken only with `confirm` equal to the action (set by inbox.js after a dialog, or by the
server's confirmation page, pages.confirm_page). Any other request (sampling, URL mode, ...) is
described, not rendered: only an MCP client can answer it.

Parsing turns the posted strings back into JSON values (a number field into a number, ...);
whether the answer is valid is decided by the protocol layer's own check (the same as
`tasks/update`), never here. A value that cannot even be converted is a `FormProblem`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from starlette.datastructures import FormData

from mcp_server.inbox.approval import Option, choice_field, choice_of
from mcp_server.inbox.templating import macro

FIELD_PREFIX = "f."
CONFIRM_FIELD = "confirm"
_INPUT_TYPES = {"email": "email", "uri": "url", "date": "date"}


class FormProblem(ValueError):
    """A posted value that is not of its field's type."""


def form_schema(request: dict[str, Any]) -> dict[str, Any] | None:
    """The requestedSchema of a form-mode elicitation, else None."""
    if request.get("method") != "elicitation/create":
        return None
    params = request.get("params")
    if not isinstance(params, dict) or params.get("mode", "form") != "form":
        return None
    schema = params.get("requestedSchema")
    return schema if isinstance(schema, dict) else None


def _options(schema: dict[str, Any]) -> list[tuple[str, str]] | None:
    """(value, title) of an enum-like string schema, else None."""
    if isinstance(schema.get("enum"), list):
        names = schema.get("enumNames")
        values = [str(v) for v in schema["enum"]]
        titles = [str(n) for n in names] if isinstance(names, list) else values
        return list(zip(values, titles + values[len(titles) :], strict=False))
    choices = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(choices, list) and all(isinstance(c, dict) and "const" in c for c in choices):
        return [(str(c["const"]), str(c.get("title", c["const"]))) for c in choices]
    return None


@dataclass(frozen=True)
class Control:
    """A field's control: a checkbox, a select, or an input of type `kind`."""

    name: str
    kind: str  # "checkbox", "select", or an input type: text, email, url, date, number
    required: bool = False
    checked: bool = False  # a checkbox
    value: object = None  # an input's value (None: none)
    limits: list[tuple[str, object]] = field(default_factory=list)  # step, min, maxlength...
    options: list[tuple[str, str]] = field(default_factory=list)  # a select's (value, title)
    chosen: frozenset[str] = frozenset()
    multiple: bool = False
    blank: bool = False  # a select's empty first option


@dataclass(frozen=True)
class Field:
    control: Control
    label: object
    help: object
    required: bool


def _control(name: str, schema: dict[str, Any], required: bool) -> Control:
    kind = schema.get("type")
    default = schema.get("default")
    if kind == "boolean":
        return Control(name, "checkbox", checked=default is True)
    if kind == "array" and isinstance(schema.get("items"), dict):
        values = frozenset(str(v) for v in default) if isinstance(default, list) else frozenset()
        items = _options(schema["items"]) or []
        return Control(name, "select", required, options=items, chosen=values, multiple=True)
    options = _options(schema)
    if options is not None:
        chosen = frozenset() if default is None else frozenset({str(default)})
        blank = not (required and default is not None)
        return Control(name, "select", required, options=options, chosen=chosen, blank=blank)
    limits: list[tuple[str, object]] = []
    if kind in ("number", "integer"):
        limits.append(("step", "1" if kind == "integer" else "any"))
        for key, attr in (("minimum", "min"), ("maximum", "max")):
            if isinstance(schema.get(key), int | float):
                limits.append((attr, schema[key]))
        input_type = "number"
    else:
        input_type = _INPUT_TYPES.get(str(schema.get("format")), "text")
        for key, attr in (("minLength", "minlength"), ("maxLength", "maxlength")):
            if isinstance(schema.get(key), int):
                limits.append((attr, schema[key]))
    return Control(name, input_type, required, value=default, limits=limits)


def form_fields(schema: dict[str, Any], skip: str | None = None) -> list[Field]:
    """The form's fields, in the schema's order (`skip`: a choice's property, its buttons)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    required = set(schema.get("required") or [])
    rows = []
    for prop, sub in properties.items():
        if prop == skip:
            continue
        sub = sub if isinstance(sub, dict) else {}
        needed = prop in required
        control = _control(FIELD_PREFIX + str(prop), sub, needed)
        rows.append(Field(control, sub.get("title") or prop, sub.get("description"), needed))
    return rows


def render_fields(schema: dict[str, Any], skip: str | None = None) -> str:
    return str(macro("_fields.html", "fields")(form_fields(schema, skip)))


def heading_of(key: str, request: dict[str, Any]) -> str:
    """A request's heading for people: its form's title, else its key in words
    (`approve-switch-traffic` -> `Approve switch traffic`); the key stays in `data-key`."""
    schema = form_schema(request)
    title = schema.get("title") if schema else None
    if isinstance(title, str) and title.strip():
        return title.strip()
    words = re.sub(r"[-_.]+", " ", key).strip()
    return words[:1].upper() + words[1:] if words else key


def message_of(request: dict[str, Any]) -> str:
    params = request.get("params")
    return str(params.get("message", "")) if isinstance(params, dict) else ""


@dataclass(frozen=True)
class Button:
    action: str  # the value it posts as `action`
    label: str
    css: str
    confirm: str | None = None  # what inbox.js asks before it sends


def _buttons(schema: dict[str, Any], message: str, consequence: str) -> list[Button]:
    """A button per answer of a choice (approval.py); Send / Decline for any other form. A
    button that sends stays disabled until the form is valid (inbox.js); one that rejects or
    declines asks first (inbox.js in a dialog; without it the server, on a page)."""
    choice = choice_of(schema, message)
    if choice is None:
        return [
            Button("accept", "Send answer", "primary needs-valid"),
            Button("decline", "Decline", "danger", f"Decline to answer? {consequence}"),
        ]
    return [
        Button(o.action, o.label, "danger needs-valid", f"{o.label}? {consequence}")
        if o.ends
        else Button(o.action, o.label, "primary needs-valid")
        for o in choice.options
    ]


@dataclass(frozen=True)
class Question:
    """An outstanding input request as a task's page shows it: a form for a viewer who may
    answer it (`answerable`), else read-only with whose decision it awaits."""

    key: str
    heading: str
    message: str
    answerable: bool
    task_id: str = ""
    csrf: str = ""
    method: object = None  # the request's method, for one that is not a form
    fields: list[Field] | None = None  # None: not a form (only an MCP client can answer it)
    buttons: list[Button] = field(default_factory=list)
    confirm_field: str = CONFIRM_FIELD
    choices: list[str] = field(default_factory=list)  # read-only: the choice's answers
    awaits: str = ""  # read-only: whose decision it awaits


def question_form(
    task_id: str, key: str, request: dict[str, Any], csrf: str, consequence: str
) -> Question:
    """One outstanding input request: its form and its buttons, or a description.
    `consequence`: what a rejection or a refusal does to the task, said before it is sent."""
    message = message_of(request)
    schema = form_schema(request)
    heading = heading_of(key, request)
    if schema is None:
        return Question(key, heading, message, True, method=request.get("method", "?"))
    fields = form_fields(schema, skip=choice_field(schema))
    buttons = _buttons(schema, message, consequence)
    return Question(key, heading, message, True, task_id, csrf, fields=fields, buttons=buttons)


def render_request(
    task_id: str, key: str, request: dict[str, Any], csrf: str, consequence: str
) -> str:
    question = question_form(task_id, key, request, csrf, consequence)
    return str(macro("_request.html", "question")(question))


def _convert(prop: str, schema: dict[str, Any], raw: list[str]) -> tuple[bool, Any]:
    """(present, value) of one field from its posted strings."""
    kind = schema.get("type")
    if kind == "boolean":
        return True, bool(raw) and raw[-1] == "true"
    if kind == "array":
        return bool(raw), [v for v in raw if v]
    text = raw[-1] if raw else ""
    if text == "":
        return False, None
    if kind in ("number", "integer"):
        try:
            number = float(text)
        except ValueError:
            raise FormProblem(f"{prop}: must be a number") from None
        if kind == "integer":
            if not number.is_integer():
                raise FormProblem(f"{prop}: must be a whole number")
            return True, int(number)
        return True, int(number) if number.is_integer() and "." not in text else number
    return True, text


class NeedsConfirmation(Exception):
    """A rejection or a refusal posted without its confirmation (`confirm` = the action)."""

    def __init__(self, action: str) -> None:
        super().__init__(action)
        self.action = action


def _content(schema: dict[str, Any], form: FormData, skip: str | None) -> dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    content: dict[str, Any] = {}
    for prop, sub in (properties or {}).items():
        if prop == skip:
            continue
        raw = [v for v in form.getlist(FIELD_PREFIX + str(prop)) if isinstance(v, str)]
        present, value = _convert(str(prop), sub if isinstance(sub, dict) else {}, raw)
        if present:
            content[str(prop)] = value
    return content


def answer_of(request: dict[str, Any], form: FormData) -> dict[str, Any]:
    """The elicitation result a submitted form stands for. A choice takes only its buttons
    (`accept` with the chosen value), any other form only Send (accept) or Decline; a
    rejection or Decline only with its confirmation (NeedsConfirmation otherwise)."""
    schema = form_schema(request) or {}
    action = str(form.get("action", ""))
    choice = choice_of(schema, message_of(request))
    options: dict[str, Option | None]
    if choice is None:
        options = {"accept": None, "decline": None}
        names = "Send answer or Decline"
    else:
        options = {o.action: o for o in choice.options}
        names = " or ".join(o.label for o in choice.options)
    if action not in options:
        raise FormProblem(f"choose {names}")
    option = options[action]
    ends = action == "decline" if option is None else option.ends
    if ends and form.get(CONFIRM_FIELD) != action:
        raise NeedsConfirmation(action)
    if action == "decline":
        return {"action": "decline"}
    if choice is None or option is None:
        return {"action": "accept", "content": _content(schema, form, None)}
    return {
        "action": "accept",
        "content": {**_content(schema, form, choice.field), choice.field: option.value},
    }
