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
  the current state first, then every change recorded in the task's history (its state,
  answers, a cancellation request, its end), until the task is terminal. The time a running
  step has taken (in `statusMessage`) is not a change: `tasks/get` shows it.
- Each also carries the task's sequence number, `_meta["mcp-tasks-temporal/sequence"]`
  (tasks/sequence.py: how far the task's history had come, the same on every replica and
  after restarts): a later state of a task never has a smaller one, so a client that meets
  notifications of one task out of order (two streams, a reconnect) drops any whose number is
  below one it has seen. A stream never sends a smaller number after a larger one. A task
  that reported how far it is also carries `_meta["mcp-tasks-temporal/progress"]`, as
  tasks/get does (core/views.py).
- Changes come from the replica's one watcher per task (tasks/watchers.py), shared by every
  stream on that task: Temporal's history long-poll, and a re-read only after new events. A
  stream costs nothing while its tasks do not change, however long it stays open.
- Limits (limits/listen.py): open streams per caller and per replica, and tasks watched per replica
  (QUOTA_EXCEEDED, HTTP 429); task ids per stream (-32602). Opening a stream reads each task
  as `tasks/get` does and spends the same poll budget (RATE_LIMITED, HTTP 429, Retry-After), so
  reopening streams is no way around the poll limiter.
- `toolsListChanged`: `notifications/tools/list_changed` whenever this server's tool list changes.
- The server ends the stream with the listen response once nothing is left to watch, or after
  `MAX_LISTEN_S` (clients listen again), or when Temporal fails a read (the client listens
  again); `:` comments keep idle streams alive.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import mcp_types as core
from pydantic import BaseModel

from mcp_server.protocol.core import capabilities
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.views import detailed_task, progress_meta
from mcp_server.protocol.frame.errors import McpError, invalid_params
from mcp_server.protocol.frame.models import (
    AcknowledgedParams,
    EmptyNotificationParams,
    ListenParams,
    ListenResult,
    Notification,
    Response,
    TaskNotificationParams,
    to_wire,
)
from mcp_server.protocol.frame.wire import META_SERVER_INFO, META_TASK_SEQUENCE, TASKS_CAPABILITY
from mcp_server.protocol.limits.listen import Lease
from mcp_server.tasks.access import find_task
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES

LISTEN_METHOD = "subscriptions/listen"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
KEEPALIVE_S = 15.0
MAX_LISTEN_S = 3600.0


@dataclass
class Subscription:
    ctx: RequestContext
    services: Services
    tasks: dict[str, TaskSnapshot]
    tools: bool
    lease: Lease
    _tools_changed: bool = False

    def _meta(self) -> dict[str, Any]:
        return {SUBSCRIPTION_ID: self.ctx.request_id}

    def acknowledgement(self) -> Notification:
        honoured = core.SubscriptionFilter(tools_list_changed=True if self.tools else None)
        if self.tasks:
            honoured = core.SubscriptionFilter.model_validate(
                {**to_wire(honoured), "taskIds": list(self.tasks)}
            )
        params = AcknowledgedParams(notifications=honoured, _meta=self._meta())
        return Notification(method="notifications/subscriptions/acknowledged", params=params)

    def task_notification(self, snapshot: TaskSnapshot) -> Notification:
        fields = detailed_task(snapshot, self.ctx.capabilities).model_dump()
        meta = {**self._meta(), META_TASK_SEQUENCE: snapshot.sequence, **progress_meta(snapshot)}
        params = TaskNotificationParams(**fields, _meta=meta)
        return Notification(method="notifications/tasks", params=params)

    def final_response(self) -> Response:
        meta = {**self._meta(), META_SERVER_INFO: self.services.server_info}
        return Response(id=self.ctx.request_id, result=ListenResult(_meta=meta))

    async def messages(self) -> AsyncIterator[BaseModel | None]:
        """The stream's messages in order; None asks for a keep-alive comment."""
        try:
            yield self.acknowledgement()
            async for message in self._updates():
                yield message
            yield self.final_response()
        finally:
            self.lease.release()

    async def _updates(self) -> AsyncIterator[BaseModel | None]:
        watchers = self.services.listening.watchers
        sent: dict[str, dict[str, Any]] = {}
        async with watchers.following(
            self.tasks.values(), within_s=MAX_LISTEN_S, quiet_s=KEEPALIVE_S
        ) as updates:
            with self._tool_changes(updates.nudge):
                async for news in updates:
                    if "failed" in news.ended.values():
                        return  # Temporal failed a read: end the stream, the client listens again
                    said = self._tools_messages() + self._task_messages(news.changed, sent)
                    if said:
                        updates.spoke()
                    for message in said:
                        yield message
                    if not (updates.tasks or self.tools):
                        return
                    if news.quiet and not said:
                        yield None

    @contextlib.contextmanager
    def _tool_changes(self, nudge: Callable[[], None]) -> Iterator[None]:
        """Only a stream that asked for tool-list changes listens for them."""
        if not self.tools:
            yield
            return

        def changed() -> None:
            self._tools_changed = True
            nudge()

        unsubscribe = self.services.registry.on_change(changed)
        try:
            yield
        finally:
            unsubscribe()

    def _tools_messages(self) -> list[BaseModel]:
        if not self._tools_changed:
            return []
        self._tools_changed = False
        params = EmptyNotificationParams(_meta=self._meta())
        return [Notification(method="notifications/tools/list_changed", params=params)]

    def _task_messages(
        self, changed: dict[str, TaskSnapshot], sent: dict[str, dict[str, Any]]
    ) -> list[BaseModel]:
        """A notification for each task whose view changed (not only its running time)."""
        messages: list[BaseModel] = []
        for task_id, snapshot in changed.items():
            view = to_wire(detailed_task(snapshot, self.ctx.capabilities))
            if view != sent.get(task_id):
                sent[task_id] = view
                messages.append(self.task_notification(snapshot))
        return messages


def _check_poll_budget(ctx: RequestContext, services: Services, task_id: str) -> None:
    """Opening a stream reads the task as tasks/get does, from the same budget."""
    try:
        services.limits.polls.check(ctx.principal, task_id)
    except McpError as err:
        retry = (err.data or {}).get("retryAfterMs")
        raise McpError(
            err.code,
            f"subscriptions/listen names a task that is read much faster than its "
            f"pollIntervalMs allows (listen and tasks/get share one budget); retry in {retry} ms",
            err.data,
            http_status=err.http_status,
            headers=err.headers,
        ) from None


async def listen(
    ctx: RequestContext, services: Services, params: ListenParams
) -> AsyncIterator[BaseModel | None]:
    """Validate a listen request (errors here are ordinary JSON-RPC errors, not a stream) and
    return its messages: JSON-RPC messages, and None where a keep-alive comment is due."""
    listening = services.listening
    wanted = params.notifications
    task_ids = (wanted.model_extra or {}).get("taskIds")
    if task_ids is not None:
        capabilities.require(
            ctx.capabilities, TASKS_CAPABILITY, "taskIds belong to the tasks extension"
        )
        if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids):
            raise invalid_params("params.notifications.taskIds must be an array of strings")
        if len(task_ids) > listening.max_task_ids:
            raise invalid_params(
                f"notifications.taskIds lists {len(task_ids)} tasks; at most "
                f"{listening.max_task_ids} are accepted on one stream"
            )
    lease = listening.slots.acquire(ctx.principal)
    misses = services.limits.rates.misses  # each unknown taskId is a "not found"
    honoured: dict[str, TaskSnapshot] = {}
    try:
        for task_id in dict.fromkeys(task_ids or []):
            _check_poll_budget(ctx, services, task_id)
            snapshot = await find_task(
                services.store, task_id, ctx.principal, services.clock, misses, ctx.identity
            )
            if snapshot is not None:
                services.limits.polls.learn_interval(
                    ctx.principal, task_id, snapshot.poll_interval_ms
                )
                honoured[task_id] = snapshot
        listening.check_room(
            task_id
            for task_id, snapshot in honoured.items()
            if snapshot.status not in TERMINAL_STATUSES
        )
    except BaseException:
        lease.release()
        raise
    subscription = Subscription(ctx, services, honoured, wanted.tools_list_changed is True, lease)
    return subscription.messages()
