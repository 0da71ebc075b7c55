"""Decisions as buttons: a question whose form turns on one required choice is one button per
answer, each saying what it does, never a checkbox to tick or a select beside Accept/Decline.

The choice (`choice_of`) is the form's one required property that is
- a boolean: an approval (deploy's gate, the demo job's `approve`, any tool's yes/no), two
  buttons "Approve step 2/2 switch-traffic" / "Reject step 2/2 switch-traffic", labelled from
  the question's own message ("Next: step 2/2 "switch-traffic"" is how deploy says it), else
  "Approve: <the message's first line>" / "Reject";
- or a string enum of at most `MAX_OPTIONS` values of which one rejects (request_approval's
  `decision`: approve / reject), a button per value, named by its title.

What the buttons send is what the workflows read (workflows/deploy.py, multi_step_job.py:
approved only when `accept` with the boolean true; request_approval.py: `accept` with
`decision`): Approve is `accept` with true, Reject `accept` with false, so the comment typed
travels with the rejection. An answer that rejects (`ends`) is taken only once confirmed (forms.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_STEP = re.compile(r'\bstep (\d+)/(\d+) "([^"]+)"')
_MAX_LABEL = 60
MAX_OPTIONS = 4
_REJECTING = re.compile(r"^(reject|deny|decline|abort|cancel|roll ?back|no\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Option:
    action: str  # the button's value
    label: str
    value: Any  # what the choice's property gets
    ends: bool  # a rejection: asks for confirmation first


@dataclass(frozen=True)
class Choice:
    field: str
    options: list[Option]


def what_is_decided(message: str) -> str:
    """ "step 2/2 switch-traffic" for a deploy's gate, else the message's first line (cut)."""
    found = _STEP.search(message)
    if found is not None:
        return f"step {found.group(1)}/{found.group(2)} {found.group(3)}"
    first = message.strip().splitlines()[0].strip() if message.strip() else ""
    return first if len(first) <= _MAX_LABEL else first[: _MAX_LABEL - 1].rstrip() + "…"


def decision_labels(message: str) -> tuple[str, str]:
    """The texts of an approval's Approve and Reject buttons."""
    subject = what_is_decided(message)
    if not subject:
        return "Approve", "Reject"
    if _STEP.search(message):
        return f"Approve {subject}", f"Reject {subject}"
    return f"Approve: {subject}", "Reject"


def _enum(schema: dict[str, Any]) -> list[tuple[str, str]] | None:
    """(value, title) of a string enum that holds a rejection, else None."""
    if schema.get("type") != "string" or not isinstance(schema.get("enum"), list):
        return None
    values = [str(v) for v in schema["enum"]]
    names = schema.get("enumNames")
    titles = [str(n) for n in names] if isinstance(names, list) else []
    titles += [v.capitalize() for v in values[len(titles) :]]
    if not 2 <= len(values) <= MAX_OPTIONS or not any(_REJECTING.match(v) for v in values):
        return None
    return list(zip(values, titles, strict=False))


def _is_choice(schema: object) -> bool:
    if not isinstance(schema, dict):
        return False
    return schema.get("type") == "boolean" or _enum(schema) is not None


def choice_field(schema: dict[str, Any] | None) -> str | None:
    """The form's one required boolean or rejecting enum, else None."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    required = schema.get("required")
    properties = schema["properties"]
    names = [str(n) for n in required or [] if _is_choice(properties.get(n))]
    return names[0] if len(names) == 1 else None


def choice_of(schema: dict[str, Any] | None, message: str) -> Choice | None:
    field = choice_field(schema)
    if field is None or schema is None:
        return None
    sub = schema["properties"][field]
    step = _STEP.search(message)
    if sub.get("type") == "boolean":
        approve, reject = decision_labels(message)
        return Choice(
            field, [Option("approve", approve, True, False), Option("reject", reject, False, True)]
        )
    suffix = f" {what_is_decided(message)}" if step else ""
    options = [
        Option(f"choose:{value}", f"{title}{suffix}", value, bool(_REJECTING.match(value)))
        for value, title in _enum(sub) or []
    ]
    return Choice(field, options)
