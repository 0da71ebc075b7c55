"""Task snapshots rendered as the 2025-11-25 revision's own task objects (its `Task`, with
`ttl` and `pollInterval`; `CreateTaskResult` nests it under `task`). `ttl` is required and
nullable: null is sent, not omitted."""

from __future__ import annotations

from typing import Any

import mcp_types as core
from pydantic import SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from mcp_server.protocol.core.views import task_fields
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
    """The extension's task fields under this revision's names (`ttl`, `pollInterval`)."""
    fields = task_fields(snapshot)
    fields["ttl"] = fields.pop("ttl_ms")
    fields["poll_interval"] = fields.pop("poll_interval_ms")
    return fields


def task(snapshot: TaskSnapshot) -> Task:
    return Task(**_fields(snapshot))


def create_task_result(snapshot: TaskSnapshot) -> CreateTaskResult:
    return CreateTaskResult(task=task(snapshot))


def get_task_result(snapshot: TaskSnapshot) -> GetTaskResult:
    return GetTaskResult(**_fields(snapshot))


def cancel_task_result(snapshot: TaskSnapshot) -> CancelTaskResult:
    return CancelTaskResult(**_fields(snapshot))
