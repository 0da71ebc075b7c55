"""The event types this server offers (SEP-3415 `events/list`), and what a subscription to one
is: its key, its id, the lifetime it is granted.

Rules implemented:
- Four event types, one per task status a task announces: `task.input_required`,
  `task.completed`, `task.failed`, `task.cancelled`; webhook delivery only. Arguments (all
  optional): `taskId` (one task) and `tool` (one tool's tasks); none: every task of the caller.
  The payload is the task as operators' webhooks show it (no result: fetch it with tasks/get),
  with `sequence`, a number per task that only grows.
- The subscription key is (principal, delivery.url, name, arguments), arguments compared as
  canonical JSON; the id is `sub_` and 32 hex digits of its SHA-256: stable over refreshes
  and restarts, a routing handle and never a capability (no method takes it).
- The lifetime granted is the suggestion clamped to [events_min_ttl_s, events_max_ttl_s], the
  default without a suggestion; no expiry (`ttlMs: null`) is never granted: the longest is.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mcp_server.protocol.events.models import EventType
from mcp_tasks.contracts.events import EVENT_NAMES
from mcp_tasks.settings import Settings

_ARGUMENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "taskId": {"type": "string", "description": "Only this task's event"},
        "tool": {"type": "string", "description": "Only the events of this tool's tasks"},
    },
    "additionalProperties": False,
}
_PAYLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "taskId": {"type": "string"},
        "tool": {"type": "string"},
        "status": {"type": "string"},
        "statusMessage": {"type": ["string", "null"]},
        "createdAt": {"type": "string", "format": "date-time"},
        "lastUpdatedAt": {"type": "string", "format": "date-time"},
        "inputRequests": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"key": {"type": "string"}, "message": {"type": "string"}},
            },
        },
        "progress": {
            "type": "object",
            "description": "How far the task reported it is (a step of a total, or a fraction "
            "of 1); only when it reported numbers",
            "properties": {"progress": {"type": "number"}, "total": {"type": "number"}},
            "required": ["progress"],
        },
        "sequence": {"type": "integer", "description": "Grows with every event of the task"},
    },
    "required": ["taskId", "tool", "status", "sequence"],
}
_WHAT = {
    "input_required": "Fires when one of your tasks asks for input",
    "completed": "Fires when one of your tasks completes",
    "failed": "Fires when one of your tasks fails",
    "cancelled": "Fires when one of your tasks is cancelled",
}
EVENT_TYPES = [
    EventType(
        name=name,
        description=_WHAT[status],
        delivery=["webhook"],
        input_schema=_ARGUMENTS_SCHEMA,
        payload_schema=_PAYLOAD_SCHEMA,
    )
    for status, name in EVENT_NAMES.items()
]
NAMES = frozenset(EVENT_NAMES.values())


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def subscription_id(principal: str, url: str, name: str, arguments: dict[str, Any]) -> str:
    digest = hashlib.sha256(canonical([principal, url, name, arguments]).encode()).hexdigest()
    return f"sub_{digest[:32]}"


def granted_ttl_s(settings: Settings, ttl_ms: int | None, suggested: bool) -> float:
    """The lifetime granted for a suggestion (`suggested`: the field was there at all)."""
    if not suggested:
        wanted = settings.events_default_ttl_s
    elif ttl_ms is None:  # no expiry asked: the longest finite one is granted
        wanted = settings.events_max_ttl_s
    else:
        wanted = ttl_ms / 1000
    return min(settings.events_max_ttl_s, max(settings.events_min_ttl_s, wanted))
