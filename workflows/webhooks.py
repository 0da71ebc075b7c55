"""Durable webhook notifications of a task: one child workflow per endpoint and event.

A task whose `TaskInput.webhooks` names endpoints (the server fills it from the operator's
file, mcp_tasks/webhooks/endpoints.py: ids and events only, never a URL or a secret) notifies
them when it asks a question (`input_required`, once per `ask`/`ask_all`) and when it ends
`completed`, `failed` or `cancelled`.

Why a child workflow and not an activity of the task: a notification outlives the task (a
`completed` is sent once the task has ended, and may be retried for a day), and its retries
must not keep the task open or fill its history. The child is started with
`ParentClosePolicy.ABANDON`, and the task waits for it to have *started* before it closes:
Temporal never starts an initiated child whose parent has already closed.

The child's workflow id, `<taskId>.webhook.<first run id>.<n>` (n counts the task's
notifications, carried over continue-as-new), is the delivery id: the same on every retry and
after every restart, so a receiver deduplicates on it. The child is the delivery engine's
`McpWebhookDelivery` (workflows/delivery.py: retried for up to a day; a refusal, or an
endpoint the worker no longer knows, is not retried).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from mcp_tasks.contracts.events import (
    EVENT_NAMES,
    EVENTS_PATCH,
    TASK_EVENT_SIGNAL,
    TaskEvent,
    subscriptions_workflow_id,
)
from mcp_tasks.contracts.task_state import TaskState, iso_timestamp
from mcp_tasks.contracts.task_status import TaskStatus
from mcp_tasks.contracts.webhooks import QuestionView, TaskView, WebhookDelivery
from workflows.delivery import WebhookDeliveryWorkflow

# Guards the commands notifications add (a marker, child starts): only tasks that name
# endpoints ever reach it, and their histories all have the marker.
WEBHOOKS_PATCH = "mcp-webhooks"
MAX_MESSAGE_CHARS = 1000
MAX_REQUESTS = 20


def task_view(state: TaskState) -> TaskView:
    """What a notification tells of the task: its state as published (redacted like the
    memo, with the numbers of its progress when it reported some), each question by its
    message only."""
    requests: list[QuestionView] = []
    for key, request in list(state.input_requests.items())[:MAX_REQUESTS]:
        params = request.get("params") if isinstance(request, dict) else None
        message = params.get("message") if isinstance(params, dict) else None
        entry: QuestionView = {"key": key, "message": str(message or "")[:MAX_MESSAGE_CHARS]}
        if state.approvers.get(key):  # whose decision it awaits (names as configured)
            entry["approvers"] = list(state.approvers[key])
        requests.append(entry)
    message = state.status_message
    view: TaskView = {
        "taskId": state.task_id,
        "tool": state.tool,
        "status": state.status,
        "statusMessage": message[:MAX_MESSAGE_CHARS] if message is not None else None,
        "createdAt": state.created_at,
        "lastUpdatedAt": state.last_updated_at,
        "inputRequests": requests,
    }
    if state.requested_by:
        view["requestedBy"] = state.requested_by
    # How far the task reported it is ({"progress": n, "total"?: m}), only when it did: the
    # notification of every other task is exactly what it always was.
    if state.progress is not None:
        view["progress"] = dict(state.progress)
    return view


def task_sequence(history_base: int) -> int:
    """The task's order number now: the length of its history (replay-safe: the same on every
    replay of this point), plus `history_base`, the lengths of its runs before a continue-as-new
    (carried over as `historyBase`), so it only grows for the task's whole life."""
    return history_base + workflow.info().get_current_history_length()


def failure_message(failure: BaseException) -> str:
    """The innermost message of a failure chain, as tasks/get shows a failed task's."""
    cause: BaseException | None = failure
    message = ""
    while cause is not None:
        message = getattr(cause, "message", None) or str(cause) or message
        cause = getattr(cause, "cause", None)
    return message or "unknown failure"


class Notifications:
    """The notifications of one task run. `send` starts them without waiting; `settle` waits
    until every child has started, and must run before the task closes or continues as new."""

    def __init__(
        self,
        task_id: str,
        subscriptions: list[dict[str, Any]],
        sent: int,
        history_base: int = 0,
        events_owner: str = "",
    ) -> None:
        self._task_id = task_id
        self._subscriptions = subscriptions
        self.sent = sent
        self._history_base = history_base
        # The owner whose event subscriptions hear of this task ("" when it announces none).
        self._events_owner = events_owner
        self._starting: list[asyncio.Task[None]] = []

    def sequence(self) -> int:
        """The task's order number now (`task_sequence`); carried over continue-as-new as
        `historyBase`, so the next run counts on from it."""
        return task_sequence(self._history_base)

    def send(self, event: str, state: TaskState) -> None:
        endpoints = [
            str(s.get("endpoint"))
            for s in self._subscriptions
            if isinstance(s, dict) and event in (s.get("events") or ())
        ]
        announce = bool(self._events_owner) and event in EVENT_NAMES
        if not endpoints and not announce:
            return
        view = task_view(state)
        occurred_at = iso_timestamp(workflow.now())
        sequence = self.sequence()
        if endpoints and workflow.patched(WEBHOOKS_PATCH):
            self._notify(endpoints, event, occurred_at, view, sequence)
        if announce and workflow.patched(EVENTS_PATCH):
            announced = TaskEvent(
                state.task_id, state.tool, event, occurred_at, sequence, dict(view)
            )
            self._starting.append(asyncio.create_task(self._announce(announced)))

    def _notify(
        self,
        endpoints: list[str],
        event: str,
        occurred_at: str,
        view: TaskView,
        sequence: int,
    ) -> None:
        # The task's first run id tells apart the notifications of a taskId's new run (a
        # keyed task that expired), which counts from 1 again; continue-as-new keeps it.
        run = workflow.info().first_execution_run_id
        for endpoint in endpoints:
            self.sent += 1
            delivery = WebhookDelivery(
                f"{self._task_id}.webhook.{run}.{self.sent}",
                endpoint,
                event,
                occurred_at,
                dict(view),
                sequence,
            )
            # A task of its own, not awaited here: the question is published at once, and a
            # cancellation of the task (which cancels only its main coroutine) cannot
            # interrupt the start.
            self._starting.append(asyncio.create_task(self._start(delivery)))

    async def _announce(self, event: TaskEvent) -> None:
        """Tell the owner's subscriptions workflow (workflows/event_subscriptions.py); none
        runs when the owner holds no subscription, and the failed signal is all it costs."""
        target = subscriptions_workflow_id(workflow.info().task_queue, self._events_owner)
        try:
            await workflow.get_external_workflow_handle(target).signal(TASK_EVENT_SIGNAL, event)
        except Exception as err:  # nobody subscribed (or no longer): never fail the task
            workflow.logger.debug("no event subscriptions for %s: %s", target, err)

    async def closing(self, event: TaskStatus, state: TaskState) -> None:
        """Notify of the task's end (`state` as it ends) and wait until every notification of
        the task has started; the task publishes its final state and closes after this."""
        final = replace(
            state, status=event, input_requests={}, last_updated_at=iso_timestamp(workflow.now())
        )
        self.send(event, final)
        await self.settle()

    async def settle(self) -> None:
        starting, self._starting = self._starting, []
        if not starting:
            return
        together = asyncio.gather(*starting)
        while True:
            try:
                # Shielded: a cancellation of the task now would cancel the starts with it,
                # and the task would close without its notifications. It comes too late to
                # change how the task ends (its work is done), so it is let pass.
                await asyncio.shield(together)
                return
            except asyncio.CancelledError:
                if together.done() and (together.cancelled() or together.exception()):
                    raise  # the starts themselves were cancelled: the worker evicts the run
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()

    async def _start(self, delivery: WebhookDelivery) -> None:
        try:
            await workflow.start_child_workflow(
                WebhookDeliveryWorkflow.run,
                delivery,
                id=delivery.delivery_id,
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                cancellation_type=workflow.ChildWorkflowCancellationType.ABANDON,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                static_summary=f"webhook {delivery.event} to {delivery.endpoint}",
            )
        except WorkflowAlreadyStartedError:  # cannot happen with these ids; never fail a task
            workflow.logger.warning("webhook delivery %s already exists", delivery.delivery_id)
