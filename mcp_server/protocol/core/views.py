"""Task snapshots rendered as the typed wire objects of the tasks extension (wire §2.3-§2.5).

- CreateTaskResult is flat: `Result & Task & {resultType: "task"}`, never a nested `task`, and
  never `result`, `error`, `inputRequests` or `requestState`.
- GetTaskResult is `Result & DetailedTask & {resultType: "complete"}`: `inputRequests` only when
  `input_required`, `result` only when `completed`, `error` only when `failed`; Result's
  `_meta` carries `mcp-tasks-temporal/progress` when the task reported numbers (and is
  omitted otherwise).
- Absent optional fields are omitted, never sent as null (`ttlMs` alone may be null).
- An inlined result carries `resultType: "complete"` and never the 2025-11-25 related-task key.
- A client's `tasks/get` and `notifications/tasks` show the task as that client may see it
  (protocol/core/client_view.py): only the input requests it can take, `paused` only when declared.
"""

from __future__ import annotations

from typing import Any

import mcp_types as core

from mcp_server.protocol.core.capabilities import Declared
from mcp_server.protocol.core.client_view import as_seen_by, is_paused_for
from mcp_server.protocol.frame.errors import error_object
from mcp_server.protocol.frame.models import CreateTaskResult, DetailedTask, ExtTask, GetTaskResult
from mcp_server.protocol.frame.wire import META_TASK_PROGRESS
from mcp_server.tasks.snapshots import TaskSnapshot

RELATED_TASK = "io.modelcontextprotocol/related-task"


def tool_result(result: dict[str, Any]) -> core.CallToolResult:
    """A workflow's result (a CallToolResult as JSON) as the typed model."""
    model = core.CallToolResult.model_validate(result)
    if model.meta and RELATED_TASK in model.meta:
        model.meta = {k: v for k, v in model.meta.items() if k != RELATED_TASK}
    return model


def task_fields(snapshot: TaskSnapshot) -> dict[str, Any]:
    return {
        "task_id": snapshot.task_id,
        "status": snapshot.status,
        "status_message": snapshot.status_message or None,
        "created_at": snapshot.created_at,
        "last_updated_at": snapshot.last_updated_at,
        "ttl_ms": snapshot.ttl_ms,
        "poll_interval_ms": snapshot.advertised_poll_interval_ms
        or snapshot.poll_interval_ms
        or None,
    }


def task(snapshot: TaskSnapshot) -> ExtTask:
    return ExtTask(**task_fields(snapshot))


def _details(snapshot: TaskSnapshot, declared: Declared | None = None) -> dict[str, Any]:
    """The DetailedTask fields; with `declared`, as the client that declared it sees them."""
    if declared is not None:
        if is_paused_for(snapshot, declared):
            return {**task_fields(snapshot), "status": "paused"}
        snapshot = as_seen_by(snapshot, declared)
    fields = task_fields(snapshot)
    if snapshot.status == "input_required":
        fields["input_requests"] = snapshot.input_requests
    elif snapshot.status == "completed" and snapshot.result is not None:
        fields["result"] = tool_result(snapshot.result)
    elif snapshot.status == "failed" and snapshot.error is not None:
        fields["error"] = core.ErrorData.model_validate(error_object(snapshot.error))
    return fields


def detailed_task(snapshot: TaskSnapshot, declared: Declared | None = None) -> DetailedTask:
    return DetailedTask(**_details(snapshot, declared))


def create_task_result(snapshot: TaskSnapshot) -> CreateTaskResult:
    return CreateTaskResult(**task_fields(snapshot))


def progress_meta(snapshot: TaskSnapshot) -> dict[str, Any]:
    """`_meta` entries of a task the tasks/get result and `notifications/tasks` carry: the
    numbers it reported (wire.META_TASK_PROGRESS), none when it reported none."""
    if snapshot.progress is None:
        return {}
    return {META_TASK_PROGRESS: dict(snapshot.progress)}


def get_task_result(snapshot: TaskSnapshot, declared: Declared | None = None) -> GetTaskResult:
    """The tasks/get result; with `declared`, as that client sees it (operators see all)."""
    return GetTaskResult(**_details(snapshot, declared), _meta=progress_meta(snapshot) or None)
