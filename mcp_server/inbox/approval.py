"""Approvals: a question whose form is one required boolean (deploy's gate, the demo job's
`approve`, any tool's yes/no) is two buttons that say what they do, never a checkbox.

- `approval_field`: the name of that boolean, else None (a richer form keeps its fields).
- `decision_labels`: "Approve step 2/2 switch-traffic" / "Reject step 2/2 switch-traffic",
  from the question's own message ("Next: step 2/2 "switch-traffic"" is how deploy says it),
  else the message's first line.
- `approval_answer`: what the two buttons mean, as the workflows read answers
  (workflows/deploy.py, workflows/demo.py: approved only when `accept` with the boolean
  true): Approve is `accept` with it true, Reject is `accept` with it false, so the comment
  the approver typed travels with the rejection.
"""

from __future__ import annotations

import re
from typing import Any

_STEP = re.compile(r'\bstep (\d+)/(\d+) "([^"]+)"')
_MAX_LABEL = 60


def approval_field(schema: dict[str, Any] | None) -> str | None:
    """The one required property of `schema` when it is a boolean, else None."""
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list) or len(required) != 1:
        return None
    (name,) = required
    sub = properties.get(name)
    return str(name) if isinstance(sub, dict) and sub.get("type") == "boolean" else None


def what_is_decided(message: str) -> str:
    """ "step 2/2 switch-traffic" for a deploy's gate, else the message's first line (cut)."""
    found = _STEP.search(message)
    if found is not None:
        return f"step {found.group(1)}/{found.group(2)} {found.group(3)}"
    first = message.strip().splitlines()[0].strip() if message.strip() else ""
    return first if len(first) <= _MAX_LABEL else first[: _MAX_LABEL - 1].rstrip() + "…"


def decision_labels(message: str) -> tuple[str, str]:
    """The texts of the Approve and Reject buttons."""
    subject = what_is_decided(message)
    if not subject:
        return "Approve", "Reject"
    if _STEP.search(message):
        return f"Approve {subject}", f"Reject {subject}"
    return f"Approve: {subject}", "Reject"


def approval_answer(field: str, approve: bool, others: dict[str, Any]) -> dict[str, Any]:
    """The elicitation result of Approve (`approve`) or Reject, with the form's other fields."""
    return {"action": "accept", "content": {**others, field: approve}}
