"""Task snapshots rendered as the 2025-11-25 revision's own task objects (its `Task`, with
`ttl` and `pollInterval`; `CreateTaskResult` nests it under `task`). `ttl` is required and
nullable: null is sent, not omitted."""

from __future__ import annotations

from typing import Any

import mcp_types as core
from pydantic import SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from mcp_server.tasks.snapshots import TaskSnapshot


class _NullableTtl:
    ttl: int | None

    @model_serializer(mode="wrap")
    def _keep_null_ttl(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        data["ttl"] = self.ttl
        return data


class Task(_NullableTtl, core.Task):
    pass


class GetTaskResult(_NullableTtl, core.GetTaskResult):
    pass


class CancelTaskResult(_NullableTtl, core.CancelTaskResult):
    pass


class CreateTaskResult(core.CreateTaskResult):
    task: Task


def _fields(snapshot: TaskSnapshot) -> dict[str, Any]:
    return {
        "task_id": snapshot.task_id,
        "status": snapshot.status,
        "status_message": snapshot.status_message or None,
        "created_at": snapshot.created_at,
        "last_updated_at": snapshot.last_updated_at,
        "ttl": snapshot.ttl_ms,
        "poll_interval": snapshot.poll_interval_ms or None,
    }


def task(snapshot: TaskSnapshot) -> Task:
    return Task(**_fields(snapshot))


def create_task_result(snapshot: TaskSnapshot) -> CreateTaskResult:
    return CreateTaskResult(task=task(snapshot))


def get_task_result(snapshot: TaskSnapshot) -> GetTaskResult:
    return GetTaskResult(**_fields(snapshot))


def cancel_task_result(snapshot: TaskSnapshot) -> CancelTaskResult:
    return CancelTaskResult(**_fields(snapshot))
