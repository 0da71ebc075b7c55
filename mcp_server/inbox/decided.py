"""What was decided on a task, for its page: each answered question's decision (Approved,
Rejected, Declined, the chosen value, or the fields answered), who made it, when, and the
comment that came with it (a `comment`, `reason` or `note` field).

An answer is read as an approval when its content holds exactly one boolean and otherwise only
text (the shape approval.py sends: the boolean, an optional comment). templates/_decisions.html
shows them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp_server.inbox.templating import macro
from mcp_server.inbox.times import parse_time, when
from mcp_server.tasks.task_history import Decision

COMMENT_FIELDS = ("comment", "reason", "note")


def _comment(content: dict[str, Any]) -> str | None:
    for name in COMMENT_FIELDS:
        value = content.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def decision_label(answer: dict[str, Any]) -> tuple[str, str]:
    """(what was decided, its tone: ok | bad | idle)."""
    action = answer.get("action")
    if action == "decline":
        return "Declined", "bad"
    if action == "cancel":
        return "Dismissed", "idle"
    content = answer.get("content") if isinstance(answer.get("content"), dict) else {}
    assert isinstance(content, dict)
    flags = [v for v in content.values() if isinstance(v, bool)]
    if len(flags) == 1 and all(isinstance(v, bool | str) for v in content.values()):
        return ("Approved", "ok") if flags[0] else ("Rejected", "bad")
    decision = content.get("decision")
    if isinstance(decision, str):
        return f"Decision: {decision}", "bad" if decision.startswith("reject") else "ok"
    fields = [
        f"{name}={value if isinstance(value, str) else json.dumps(value)}"
        for name, value in content.items()
        if name not in COMMENT_FIELDS
    ]
    return ("Answered: " + ", ".join(fields) if fields else "Answered"), "ok"


@dataclass(frozen=True)
class Decided:
    """One answered question's decision, as its task's page shows it."""

    key: str
    label: str
    tone: str  # ok | bad | idle
    by: str
    at: str  # as recorded (ISO 8601)
    when: str  # the moment and how long ago, or `at` when it is no timestamp
    comment: str | None


def _one(key: str, decision: Decision, now: datetime) -> Decided:
    label, tone = decision_label(decision.answer)
    content = decision.answer.get("content")
    comment = _comment(content) if isinstance(content, dict) else None
    at = parse_time(decision.at)
    moment = when(at, now) if at else decision.at
    return Decided(key, label, tone, decision.by, decision.at, moment, comment)


def decided_items(decided: dict[str, Decision], now: datetime) -> list[Decided]:
    """The decisions, oldest first."""
    return [_one(key, d, now) for key, d in sorted(decided.items(), key=lambda i: i[1].at)]


def render_decisions(decided: dict[str, Decision], now: datetime) -> str:
    return str(macro("_decisions.html", "decisions")(decided_items(decided, now)))
