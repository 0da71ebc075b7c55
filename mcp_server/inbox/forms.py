"""An elicitation form from its `requestedSchema`, and the submitted form back as an answer.

Rendering: strings (with enum / oneOf titles: a select; minLength/maxLength; format email, uri,
date), numbers and integers (minimum/maximum), booleans (a checkbox), arrays of enum values (a
multiple select); `required`, `default`, `title` as the label and `description` as help text.
An approval (one required boolean, approval.py) is two buttons instead of its checkbox. A form
posts `action` (its button) and `confirm`: Reject and Decline end the task (a deploy rolls
back), so they are taken only with `confirm` equal to the action (set by inbox.js after a
dialog, or by the server's confirmation page, pages.confirm_page). Any other request
(sampling, URL mode, ...) is described, not rendered: only an MCP client can answer it.

Parsing turns the posted strings back into JSON values (a number field into a number, ...);
whether the answer is valid is decided by the protocol layer's own check (the same as
`tasks/update`), never here. A value that cannot even be converted is a `FormProblem`.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.datastructures import FormData

from mcp_server.inbox.approval import Option, choice_field, choice_of
from mcp_server.inbox.html import h, hidden, join

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


def _select(name: str, options: list[tuple[str, str]], chosen: set[str], attrs: str) -> str:
    items = join(
        f'<option value="{h(v)}"{" selected" if v in chosen else ""}>{h(t)}</option>'
        for v, t in options
    )
    return f'<select name="{h(name)}" id="{h(name)}"{attrs}>{items}</select>'


def _control(name: str, schema: dict[str, Any], required: bool) -> str:
    kind = schema.get("type")
    default = schema.get("default")
    req = " required" if required else ""
    if kind == "boolean":
        checked = " checked" if default is True else ""
        return f'<input type="checkbox" name="{h(name)}" id="{h(name)}" value="true"{checked}>'
    if kind == "array" and isinstance(schema.get("items"), dict):
        items = _options(schema["items"]) or []
        chosen = {str(v) for v in default} if isinstance(default, list) else set()
        return _select(name, items, chosen, f" multiple{req}")
    options = _options(schema)
    if options is not None:
        chosen = {str(default)} if default is not None else set()
        blank = "" if required and default is not None else '<option value="">—</option>'
        select = _select(name, options, chosen, req)
        return select.replace(">", f">{blank}", 1) if blank else select
    attrs = req
    if kind in ("number", "integer"):
        step = "1" if kind == "integer" else "any"
        attrs += f' step="{step}"'
        for key, attr in (("minimum", "min"), ("maximum", "max")):
            if isinstance(schema.get(key), int | float):
                attrs += f' {attr}="{h(schema[key])}"'
        input_type = "number"
    else:
        input_type = _INPUT_TYPES.get(str(schema.get("format")), "text")
        for key, attr in (("minLength", "minlength"), ("maxLength", "maxlength")):
            if isinstance(schema.get(key), int):
                attrs += f' {attr}="{h(schema[key])}"'
    value = f' value="{h(default)}"' if default is not None else ""
    return f'<input type="{input_type}" name="{h(name)}" id="{h(name)}"{value}{attrs}>'


def render_fields(schema: dict[str, Any], skip: str | None = None) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    required = set(schema.get("required") or [])
    rows = []
    for prop, sub in properties.items():
        if prop == skip:
            continue
        sub = sub if isinstance(sub, dict) else {}
        name = FIELD_PREFIX + str(prop)
        label = h(sub.get("title") or prop)
        mark = ' <span class="req" title="required">*</span>' if prop in required else ""
        help_text = sub.get("description")
        helper = f'<p class="help">{h(help_text)}</p>' if help_text else ""
        css = "field check" if sub.get("type") == "boolean" else "field"
        rows.append(
            f'<div class="{css}"><label for="{h(name)}">{label}{mark}</label>'
            f"{_control(name, sub, prop in required)}{helper}</div>"
        )
    return join(rows)


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


def _button(action: str, label: str, css: str, confirm: str | None = None) -> str:
    ask = f' data-confirm="{h(confirm)}"' if confirm else ""
    return (
        f'<button type="submit" name="action" value="{action}" class="{css}"{ask}>'
        f"{h(label)}</button>"
    )


def _actions(schema: dict[str, Any], message: str, consequence: str) -> str:
    """A button per answer of a choice (approval.py); Send / Decline for any other form. A
    button that sends stays disabled until the form is valid (inbox.js); one that rejects or
    declines asks first (inbox.js in a dialog; without it the server, on a page)."""
    choice = choice_of(schema, message)
    if choice is not None:
        buttons = join(
            _button(o.action, o.label, "danger needs-valid", f"{o.label}? {consequence}")
            if o.ends
            else _button(o.action, o.label, "primary needs-valid")
            for o in choice.options
        )
    else:
        buttons = _button("accept", "Send answer", "primary needs-valid") + _button(
            "decline", "Decline", "danger", f"Decline to answer? {consequence}"
        )
    return f'<div class="actions">{hidden(CONFIRM_FIELD, "")}{buttons}</div>'


# The form's default button, disabled: Enter in a field sends nothing (implicit submission
# would otherwise press the first button, Approve); only a click on a button decides.
_NO_ENTER = '<button type="submit" class="no-enter" disabled hidden aria-hidden="true"></button>'


def render_request(
    task_id: str, key: str, request: dict[str, Any], csrf: str, consequence: str
) -> str:
    """One outstanding input request: its form and its buttons, or a description.
    `consequence`: what a rejection or a refusal does to the task, said before it is sent."""
    message = message_of(request)
    schema = form_schema(request)
    text = f'<p class="message">{h(message)}</p>' if message else ""
    if schema is None:
        return (
            f'<article class="request" data-key="{h(key)}"><h3>{h(heading_of(key, request))}</h3>'
            f'{text}<p class="note">This request ({h(request.get("method", "?"))}) can only be '
            "answered by an MCP client.</p></article>"
        )
    return (
        f'<article class="request" data-key="{h(key)}"><h3>{h(heading_of(key, request))}</h3>'
        f'{text}<form method="post" action="/inbox/tasks/{h(task_id)}/answer" class="answer">'
        f"{_NO_ENTER}{hidden('csrf', csrf)}{hidden('key', key)}"
        f"{render_fields(schema, skip=choice_field(schema))}"
        f"{_actions(schema, message, consequence)}</form></article>"
    )


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
