"""The methods of the handshake era (2025-11-25, 2025-06-18, 2025-03-26) on the same endpoint.

- `initialize` negotiates the version: the client's when this server speaks it, else the
  newest handshake version. The transport mints the signed session (http/sessions.py).
- `ping` and `logging/setLevel` answer an empty result. The level is not kept (a session holds
  no state): a tool's log messages go to every 2025-11-25 call's stream.
- The revision's own task support, on the same workflows and owner binding as the extension:
  `tools/call` with `task` answers `CreateTaskResult {task}`; `tasks/get` the `Task`;
  `tasks/result` waits for the end, and while the task needs input it sends the questions to
  the client as requests related to the task (`elicitation/create`, `sampling/createMessage`,
  `roots/list`, each when the session declared it; the answers are routed to the workflow,
  see core/relay.py); then the tool's result (related-task `_meta`), or the task's
  JSON-RPC error; `tasks/list` lists only the caller's tasks, paginated, from
  Temporal's visibility store; `tasks/cancel` requests cancellation and answers the task
  (a task already completed or failed: -32602). The same per-principal rate limits apply
  as to the extension's methods (cancellations, "not found" lookups: limits/rates.py).
- A session's GET stream relays its own tasks' questions (v2025/session_stream.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import mcp_types as core
from pydantic import BaseModel, Field

from mcp_server.protocol.core import tasks
from mcp_server.protocol.core.client_view import as_seen_by
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.refused_answers import Refusals
from mcp_server.protocol.core.relay import follow, outcome
from mcp_server.protocol.core.views import RELATED_TASK
from mcp_server.protocol.frame.errors import invalid_params
from mcp_server.protocol.frame.models import PaginatedParams, Params, TaskIdParams
from mcp_server.protocol.frame.wire import HANDSHAKE_VERSIONS, TASKS_EXTENSION
from mcp_server.protocol.v2025.views import cancel_task_result, get_task_result, task
from mcp_tasks.contracts.task_status import cancel_acknowledged

TASKS_PAGE_SIZE = 50


class InitializeParams(Params):
    protocol_version: str
    capabilities: core.ClientCapabilities
    client_info: core.Implementation


class SetLevelParams(Params):
    level: core.LoggingLevel


class ListTasksResult(BaseModel):
    tasks: list[Any]
    next_cursor: str | None = Field(default=None, serialization_alias="nextCursor")


def negotiate(requested: str) -> str:
    return requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]


def server_capabilities() -> core.ServerCapabilities:
    return core.ServerCapabilities(
        tools=core.ToolsCapability(list_changed=True),
        logging=core.LoggingCapability(),
        tasks=core.ServerTasksCapability(
            list=core.TasksListCapability(),
            cancel=core.TasksCancelCapability(),
            requests=core.ServerTasksRequestsCapability(
                tools=core.TasksToolsCapability(call=core.TasksCallCapability())
            ),
        ),
        extensions={TASKS_EXTENSION: {}},
    )


async def initialize(
    ctx: RequestContext, services: Services, params: InitializeParams
) -> core.InitializeResult:
    return core.InitializeResult(
        protocol_version=negotiate(params.protocol_version),
        capabilities=server_capabilities(),
        server_info=core.Implementation.model_validate(services.server_info),
        instructions=services.instructions or None,
    )


async def empty(ctx: RequestContext, services: Services, params: Params) -> core.EmptyResult:
    return core.EmptyResult()


async def get_task(ctx: RequestContext, services: Services, params: TaskIdParams) -> BaseModel:
    services.limits.polls.check(ctx.principal, params.task_id)  # as at 2026-07-28
    snapshot = await tasks.lookup(ctx, services, params.task_id)
    services.limits.polls.learn_interval(ctx.principal, snapshot.task_id, snapshot.poll_interval_ms)
    return get_task_result(as_seen_by(snapshot, ctx.capabilities))


async def task_result(ctx: RequestContext, services: Services, params: TaskIdParams) -> BaseModel:
    await tasks.lookup(ctx, services, params.task_id)
    # An answer the task refuses is asked again, saying why (refused_answers.py).
    snapshot = await follow(ctx, services, params.task_id, None, refusals=Refusals())
    result = outcome(snapshot)
    result.meta = {**(result.meta or {}), RELATED_TASK: {"taskId": snapshot.task_id}}
    return result


async def list_tasks(
    ctx: RequestContext, services: Services, params: PaginatedParams
) -> ListTasksResult:
    try:
        snapshots, cursor = await services.store.list_owned(
            ctx.principal, TASKS_PAGE_SIZE, params.cursor
        )
    except ValueError as err:
        raise invalid_params("Invalid cursor") from err
    seen = [as_seen_by(s, ctx.capabilities) for s in snapshots]
    return ListTasksResult(tasks=[task(s) for s in seen], next_cursor=cursor)


async def cancel_task(ctx: RequestContext, services: Services, params: TaskIdParams) -> BaseModel:
    services.limits.rates.cancels.take(ctx.principal)
    snapshot = await tasks.lookup(ctx, services, params.task_id)
    await tasks.cancel(ctx, services, snapshot)
    shown = cancel_acknowledged(snapshot.status)
    if shown is None:
        raise invalid_params(
            f"Cannot cancel task {params.task_id}: it is already {snapshot.status}"
        )
    status, message = shown
    snapshot = replace(snapshot, status=status, status_message=message or snapshot.status_message)
    return cancel_task_result(snapshot)
