"""`subscriptions/listen`: notifications pushed on one SSE stream (wire §1.9, §2.9).

Rules implemented:
- `params.notifications` (the filter) is required; every field is opt-in, and no notification
  type the client did not request is ever sent.
- The first message is `notifications/subscriptions/acknowledged`, whose `notifications` is the
  subset honoured; every message carries `_meta["io.modelcontextprotocol/subscriptionId"]` = the
  listen request's id.
- `taskIds` needs the tasks extension on this request (-32021). Only tasks that exist, belong to
  the caller and are within their TTL are acknowledged, so the ack reveals nothing about others'.
- `notifications/tasks` carries the DetailedTask `tasks/get` would return, without `resultType`:
  the current state first, then every change, until the task is terminal.
- `toolsListChanged`: `notifications/tools/list_changed` whenever this server's tool list changes.
- The server ends the stream with the listen response once nothing is left to watch, or after
  `MAX_LISTEN_S` (clients listen again); `:` comments keep idle streams alive.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import mcp_types as core
from pydantic import BaseModel

from mcp_server.protocol import capabilities
from mcp_server.protocol.context import RequestContext, Services
from mcp_server.protocol.errors import McpError, invalid_params
from mcp_server.protocol.models import (
    AcknowledgedParams,
    EmptyNotificationParams,
    ListenParams,
    ListenResult,
    Notification,
    Response,
    TaskNotificationParams,
    to_wire,
)
from mcp_server.protocol.task_views import detailed_task
from mcp_server.protocol.wire import META_SERVER_INFO, TASKS_CAPABILITY
from mcp_server.tasks.access import find_task
from mcp_server.tasks.errors import TaskError
from mcp_server.tasks.snapshots import TaskSnapshot
from workflows.task_state import TERMINAL_STATUSES

LISTEN_METHOD = "subscriptions/listen"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
MAX_TASK_IDS = 100
WATCH_INTERVAL_S = 0.5
KEEPALIVE_S = 15.0
MAX_LISTEN_S = 3600.0


@dataclass
class Subscription:
    ctx: RequestContext
    services: Services
    task_ids: list[str]
    tools: bool
    _tools_changed: asyncio.Event = field(default_factory=asyncio.Event)

    def _meta(self) -> dict[str, Any]:
        return {SUBSCRIPTION_ID: self.ctx.request_id}

    def acknowledgement(self) -> Notification:
        honoured = core.SubscriptionFilter(tools_list_changed=True if self.tools else None)
        if self.task_ids:
            honoured = core.SubscriptionFilter.model_validate(
                {**to_wire(honoured), "taskIds": list(self.task_ids)}
            )
        params = AcknowledgedParams(notifications=honoured, _meta=self._meta())
        return Notification(method="notifications/subscriptions/acknowledged", params=params)

    def task_notification(self, snapshot: TaskSnapshot) -> Notification:
        fields = detailed_task(snapshot).model_dump()
        params = TaskNotificationParams(**fields, _meta=self._meta())
        return Notification(method="notifications/tasks", params=params)

    def final_response(self) -> Response:
        meta = {**self._meta(), META_SERVER_INFO: self.services.server_info}
        return Response(id=self.ctx.request_id, result=ListenResult(_meta=meta))

    async def messages(self) -> AsyncIterator[BaseModel | None]:
        """The stream's messages in order; None asks for a keep-alive comment."""
        yield self.acknowledgement()
        # Only a stream that asked for tool-list changes listens for them: for any other, the
        # event would stay set and turn the wait below into a busy loop of Temporal reads.
        unsubscribe = (
            self.services.registry.on_change(self._tools_changed.set) if self.tools else None
        )
        try:
            async for message in self._updates():
                yield message
        finally:
            if unsubscribe is not None:
                unsubscribe()
        yield self.final_response()

    async def _updates(self) -> AsyncIterator[BaseModel | None]:
        watching = list(self.task_ids)
        sent: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + MAX_LISTEN_S
        last_message = time.monotonic()
        while (watching or self.tools) and time.monotonic() < deadline:
            for task_id in list(watching):
                try:
                    snapshot = await find_task(
                        self.services.store, task_id, self.ctx.principal, self.services.clock
                    )
                except (McpError, TaskError):
                    return  # Temporal unreachable: end the stream, the client listens again
                if snapshot is None:
                    watching.remove(task_id)
                    continue
                view = to_wire(detailed_task(snapshot))
                if view != sent.get(task_id):
                    sent[task_id] = view
                    last_message = time.monotonic()
                    yield self.task_notification(snapshot)
                if snapshot.status in TERMINAL_STATUSES:
                    watching.remove(task_id)
            if not (watching or self.tools):
                return
            wait = WATCH_INTERVAL_S if watching else KEEPALIVE_S
            try:
                await asyncio.wait_for(self._tools_changed.wait(), wait)
            except TimeoutError:
                pass
            if self._tools_changed.is_set():
                self._tools_changed.clear()
                last_message = time.monotonic()
                yield Notification(
                    method="notifications/tools/list_changed",
                    params=EmptyNotificationParams(_meta=self._meta()),
                )
            elif time.monotonic() - last_message >= KEEPALIVE_S:
                last_message = time.monotonic()
                yield None


async def listen(
    ctx: RequestContext, services: Services, params: ListenParams
) -> AsyncIterator[BaseModel | None]:
    """Validate a listen request (errors here are ordinary JSON-RPC errors, not a stream) and
    return its messages: JSON-RPC messages, and None where a keep-alive comment is due."""
    wanted = params.notifications
    task_ids = (wanted.model_extra or {}).get("taskIds")
    honoured: list[str] = []
    if task_ids is not None:
        capabilities.require(
            ctx.capabilities, TASKS_CAPABILITY, "taskIds belong to the tasks extension"
        )
        if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids):
            raise invalid_params("params.notifications.taskIds must be an array of strings")
        if len(task_ids) > MAX_TASK_IDS:
            raise invalid_params(f"notifications.taskIds may list at most {MAX_TASK_IDS} tasks")
        misses = services.limits.rates.misses  # each unknown taskId is a "not found"
        for task_id in dict.fromkeys(task_ids):
            if await find_task(services.store, task_id, ctx.principal, services.clock, misses):
                honoured.append(task_id)
    subscription = Subscription(ctx, services, honoured, wanted.tools_list_changed is True)
    return subscription.messages()
