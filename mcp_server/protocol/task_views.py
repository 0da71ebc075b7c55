"""Task snapshots rendered as the wire objects of the tasks extension (wire §2.3-§2.5).

- CreateTaskResult is flat: `Result & Task & {resultType: "task"}`, never a nested `task`, and
  never `result`, `error`, `inputRequests` or `requestState`.
- GetTaskResult is `Result & DetailedTask & {resultType: "complete"}`: `inputRequests` only when
  `input_required`, `result` only when `completed`, `error` only when `failed`.
- Absent optional fields are omitted, never sent as null (`ttlMs` alone may be null).
"""

from __future__ import annotations

from typing import Any

from mcp_server.tasks.snapshots import TaskSnapshot

_LEGACY_RELATED_TASK = "io.modelcontextprotocol/related-task"


def task_fields(snapshot: TaskSnapshot) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "taskId": snapshot.task_id,
        "status": snapshot.status,
        "createdAt": snapshot.created_at,
        "lastUpdatedAt": snapshot.last_updated_at,
        "ttlMs": snapshot.ttl_ms,
    }
    if snapshot.status_message:
        fields["statusMessage"] = snapshot.status_message
    if snapshot.poll_interval_ms:
        fields["pollIntervalMs"] = snapshot.poll_interval_ms
    return fields


def _inlined_result(result: dict[str, Any]) -> dict[str, Any]:
    inlined = dict(result)
    inlined.setdefault("resultType", "complete")
    meta = inlined.get("_meta")
    if isinstance(meta, dict) and _LEGACY_RELATED_TASK in meta:
        inlined["_meta"] = {k: v for k, v in meta.items() if k != _LEGACY_RELATED_TASK}
    return inlined


def detailed_task(snapshot: TaskSnapshot) -> dict[str, Any]:
    fields = task_fields(snapshot)
    if snapshot.status == "input_required":
        fields["inputRequests"] = snapshot.input_requests
    elif snapshot.status == "completed" and snapshot.result is not None:
        fields["result"] = _inlined_result(snapshot.result)
    elif snapshot.status == "failed" and snapshot.error is not None:
        fields["error"] = snapshot.error
    return fields


def create_task_result(snapshot: TaskSnapshot) -> dict[str, Any]:
    return {"resultType": "task", **task_fields(snapshot)}


def get_task_result(snapshot: TaskSnapshot) -> dict[str, Any]:
    return {"resultType": "complete", **detailed_task(snapshot)}
