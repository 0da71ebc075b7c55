"""Where webhook subscriptions live: the principal's subscriptions workflow in Temporal
(workflows/event_subscriptions.py), reached through its updates. Never this process's memory:
any replica serves any refresh, and a subscription survives every restart.

Rules implemented:
- Subscribe is one update-with-start: the first subscription of a principal starts its
  workflow, later ones join it (`USE_EXISTING`); the handshake runs inside the update.
- Unsubscribe of a principal without a running workflow finds nothing; so does a listing.
- Revoked credentials: each principal's workflow is signalled the SHA-256 of its revoked
  tokens, and drops the subscriptions they made; a principal without a workflow has none.
- Temporal unreachable or too slow: `BackendUnavailable` (a 503 the client may retry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import BackendUnavailable
from mcp_tasks.contracts.events import (
    CREDENTIALS_REVOKED_SIGNAL,
    SUBSCRIBE_UPDATE,
    SUBSCRIPTIONS_QUERY,
    UNSUBSCRIBE_UPDATE,
    CredentialsRevoked,
    SubscribeInput,
    SubscribeResult,
    SubscriptionsInput,
    UnsubscribeInput,
    subscriptions_workflow_id,
)
from mcp_tasks.settings import Settings
from workflows.event_subscriptions import EventSubscriptionsWorkflow

_UNAVAILABLE = {RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED}
_ABSENT = {RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION}


@dataclass(frozen=True)
class EventsService:
    """What the events methods need: where subscriptions live, and the operator's limits."""

    store: SubscriptionStore
    settings: Settings


class SubscriptionStore(Protocol):
    async def subscribe(self, principal: str, request: SubscribeInput) -> SubscribeResult: ...

    async def unsubscribe(self, principal: str, subscription_id: str) -> bool: ...

    async def listed(self, principal: str) -> list[dict[str, Any]]: ...

    async def revoked(self, principal: str, credentials: list[str]) -> None: ...


class TemporalSubscriptionStore:
    def __init__(self, client: Client, task_queue: str) -> None:
        self._client = client
        self._task_queue = task_queue

    async def subscribe(self, principal: str, request: SubscribeInput) -> SubscribeResult:
        start = WithStartWorkflowOperation(
            EventSubscriptionsWorkflow.run,
            SubscriptionsInput(principal),
            id=subscriptions_workflow_id(self._task_queue, principal),
            task_queue=self._task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            static_summary="event subscriptions",
        )
        try:
            result: SubscribeResult = await self._client.execute_update_with_start_workflow(
                SUBSCRIBE_UPDATE,
                request,
                start_workflow_operation=start,
                result_type=SubscribeResult,
            )
            return result
        except RPCError as err:
            raise _backend(err) from err

    async def unsubscribe(self, principal: str, subscription_id: str) -> bool:
        handle = self._client.get_workflow_handle(
            subscriptions_workflow_id(self._task_queue, principal)
        )
        try:
            found: bool = await handle.execute_update(
                UNSUBSCRIBE_UPDATE, UnsubscribeInput(subscription_id), result_type=bool
            )
            return found
        except WorkflowUpdateFailedError:
            return False
        except RPCError as err:
            if err.status in _ABSENT:  # no workflow, or a closed one: no subscription
                return False
            raise _backend(err) from err

    def _handle(self, principal: str) -> WorkflowHandle[Any, Any]:
        return self._client.get_workflow_handle(
            subscriptions_workflow_id(self._task_queue, principal)
        )

    async def listed(self, principal: str) -> list[dict[str, Any]]:
        try:
            found: list[dict[str, Any]] = await self._handle(principal).query(
                SUBSCRIPTIONS_QUERY, result_type=list
            )
            return found
        except WorkflowQueryFailedError:
            return []
        except RPCError as err:
            if err.status in _ABSENT:
                return []
            raise _backend(err) from err

    async def revoked(self, principal: str, credentials: list[str]) -> None:
        try:
            await self._handle(principal).signal(
                CREDENTIALS_REVOKED_SIGNAL, CredentialsRevoked(credentials)
            )
        except RPCError as err:
            if err.status not in _ABSENT:  # no workflow: no subscription to end
                raise _backend(err) from err


def events_offered(settings: Settings) -> bool:
    """Whether this server offers client-subscribed events: webhook subscriptions need an
    authenticated principal (SEP-3415), so never with `auth=none`; and a limit above 0."""
    return settings.auth != "none" and settings.events_max_subscriptions > 0


def _backend(err: RPCError) -> Exception:
    if err.status in _UNAVAILABLE:
        return BackendUnavailable("Temporal", err.message)
    return err
