"""How a task ended, as the inbox shows it: a green success only for a task that succeeded.

A task that ended `completed` with `isError` (a declined or failed deploy, an unapproved job),
a decision that was a rejection (`request_approval`'s structured `decision`), a task whose
steps were declined or rolled back: each is named for what it is, in the colour of a problem
(`bad`) or of no decision (`idle`). Its result text is shown with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_tasks.contracts.task_status import INBOX_LABELS

# request_approval's structured `decision` (workflows/request_approval.py) -> (label, tone).
_DECISIONS = {
    "approved": ("approved", "ok"),
    "rejected": ("rejected", "bad"),
    "dismissed": ("dismissed", "idle"),
    "expired": ("expired", "idle"),
}


@dataclass(frozen=True)
class Outcome:
    label: str  # what the status pill says (lower case, as the task statuses are)
    tone: str  # ok | bad | idle | wait | run
    detail: str | None = None  # the result's text, when the task ended with one


def _text(result: dict[str, Any] | None) -> str | None:
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list):
        return None
    texts = [str(c.get("text")) for c in content if isinstance(c, dict) and c.get("text")]
    return "\n".join(texts) or None


def _step_statuses(snapshot: TaskSnapshot) -> set[str]:
    return {str(step.get("status")) for step in snapshot.steps or []}


def _completed(snapshot: TaskSnapshot) -> Outcome:
    result = snapshot.result or {}
    detail = _text(result) or snapshot.status_message
    structured = result.get("structuredContent")
    decision = structured.get("decision") if isinstance(structured, dict) else None
    steps = _step_statuses(snapshot)
    if "declined" in steps:
        rolled = " and rolled back" if "rolled back" in steps else ""
        return Outcome(f"declined{rolled}", "bad", detail)
    if result.get("isError"):
        label = "failed, rolled back" if "rolled back" in steps else "ended with an error"
        return Outcome(label, "bad", detail)
    if isinstance(decision, str) and decision in _DECISIONS:
        label, tone = _DECISIONS[decision]
        return Outcome(label, tone, detail)
    return Outcome("completed", "ok", detail)


def outcome_of(snapshot: TaskSnapshot) -> Outcome:
    if snapshot.status == "completed":
        return _completed(snapshot)
    if snapshot.status == "failed":
        message = snapshot.error.message if snapshot.error else None
        return Outcome("failed", "bad", str(message or snapshot.status_message or ""))
    if snapshot.status == "cancelled":
        return Outcome("cancelled", "idle", snapshot.status_message)
    label = INBOX_LABELS[snapshot.status]
    return Outcome(label, "wait" if snapshot.status == "input_required" else "run")
