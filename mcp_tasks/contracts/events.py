"""Client-subscribed events (SEP-3415, webhook mode): the names and messages shared by the task
workflow (which announces its events), the subscriptions workflow of a principal, the delivery
workflow and their activities, and the server that drives them.

What travels where:
- A task whose owner may subscribe (`TaskInput.events`) signals `TaskEvent` to the workflow
  `mcp-events-<task queue>-<owner>` at each event; when no such workflow runs (its owner holds no
  subscription) the signal fails and nothing else happens.
- `mcp-events-<task queue>-<principal>` (workflows/event_subscriptions.py) holds that
  principal's webhook subscriptions: the server subscribes, refreshes and unsubscribes
  through its updates, and it starts one `McpEventDelivery` child per event and matching
  subscription.
- A delivery asks the subscriptions workflow (query `SUBSCRIPTION_QUERY`) before each attempt
  whether its subscription still lives and with which URL and secrets: an expired or removed
  subscription delivers nothing, even a retry already scheduled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Required, TypedDict

# Guards the signal a task sends per event: only tasks created with `events` reach it.
EVENTS_PATCH = "mcp-events"
SUBSCRIPTIONS_WORKFLOW = "McpEventSubscriptions"
DELIVERY_WORKFLOW = "McpEventDelivery"
DELIVER_ACTIVITY = "mcp_tasks.deliver_event"
VERIFY_ACTIVITY = "mcp_tasks.verify_event_endpoint"
TASK_EVENT_SIGNAL = "mcp.task_event"
SUBSCRIPTION_QUERY = "mcp.subscription"
SUBSCRIBE_UPDATE = "mcp.subscribe"
UNSUBSCRIBE_UPDATE = "mcp.unsubscribe"
# The server's word that tokens were revoked: their subscriptions end.
CREDENTIALS_REVOKED_SIGNAL = "mcp.credentials_revoked"
# Every live subscription of the principal, as `events/subscriptions/list` shows them.
SUBSCRIPTIONS_QUERY = "mcp.subscriptions"
# Failed deliveries in a row after which a subscription is suspended (it hears nothing until
# its client refreshes it: the refresh is the client's sign of life).
SUSPEND_AFTER_FAILURES = 3
# SubscribeResult.error when a handshake would exceed a limit per destination (the
# principal's, in the workflow; every principal's, in the worker): refused, nothing POSTed.
HANDSHAKE_LIMITED = "handshake_limited"
# ApplicationError types of the delivery activity that no retry can fix.
ENDED_ERROR = "EventSubscriptionEnded"
# The event types, by the task status each announces.
EVENT_NAMES = {
    "input_required": "task.input_required",
    "completed": "task.completed",
    "failed": "task.failed",
    "cancelled": "task.cancelled",
}
# The lastError categories of SEP-3415 (never an endpoint's own words).
ERROR_CATEGORIES = (
    "connection_refused",
    "timeout",
    "tls_error",
    "http_4xx",
    "http_5xx",
    "challenge_failed",
)


def subscriptions_workflow_id(task_queue: str, principal: str) -> str:
    """The subscriptions workflow of `principal` (a digest) among the tasks of `task_queue`."""
    return f"mcp-events-{task_queue}-{principal}"


class EventOutcome(TypedDict, total=False):
    """How one event delivery ended: the `McpEventDelivery` workflow's result (its activity's
    when delivered), kept as the subscription's delivery status."""

    outcome: Required[Literal["delivered", "ended", "gone", "failed"]]
    status: int  # the receiver's HTTP status, when delivered
    reason: str  # a SEP-3415 lastError category, when failed


class DeliveryStatus(TypedDict, total=False):
    """SEP-3415's `deliveryStatus` of a subscription (workflows/event_subscriptions.py)."""

    active: bool
    lastDeliveryAt: str | None
    lastError: str | None
    failedSince: str
    droppedEvents: int


class SubscriptionDestination(TypedDict):
    mode: Literal["webhook"]
    url: str


class SubscriptionView(TypedDict):
    """A live subscription as its principal may see it (`SUBSCRIPTIONS_QUERY`; no secret)."""

    id: str
    name: str
    arguments: dict[str, Any]
    delivery: SubscriptionDestination
    refreshBefore: str
    deliveryStatus: DeliveryStatus


@dataclass
class TaskEvent:
    """One event of a task, as its workflow announces it."""

    task_id: str
    tool: str
    event: str  # input_required, completed, failed, cancelled
    occurred_at: str
    sequence: int
    # The task as webhooks show it (workflows/webhooks.py task_view), redacted like its memo.
    task: dict[str, Any]

    @property
    def event_id(self) -> str:
        """Stable over retries and replays: the task, the event and the task's order number."""
        return f"{self.task_id}.{self.event}.{self.sequence}"


@dataclass
class SubscribeInput:
    """events/subscribe, as the server checked it (the key's parts, a valid whsec_ secret)."""

    subscription_id: str
    name: str
    arguments: dict[str, Any]
    url: str
    secret: str
    ttl_s: float  # the lifetime granted (the server clamped the suggestion)
    max_subscriptions: int
    challenge: str  # the nonce of the handshake, should this URL need one
    # The credential that subscribes (a token's or a JWT's SHA-256): the subscription ends
    # when it is revoked; and when it expires (a JWT's `exp`, ISO 8601; "" for none).
    credential: str = ""
    credential_expires_at: str = ""
    # The most deliveries of this principal's events in flight at once (0: no bound).
    max_in_flight: int = 0
    # Where the URL's POSTs go (host:port, mcp_tasks/webhooks/callback_url.py), as the
    # handshake limits count them.
    destination: str = ""


@dataclass
class SubscribeResult:
    # "" when subscribed; else "limit", HANDSHAKE_LIMITED, or a SEP-3415 lastError category of
    # the handshake.
    error: str = ""
    refresh_before: str = ""
    refreshed: bool = False
    # For a refresh: active, lastDeliveryAt, lastError (SEP-3415 deliveryStatus).
    delivery_status: dict[str, Any] = field(default_factory=dict)


@dataclass
class UnsubscribeInput:
    subscription_id: str


@dataclass
class Subscription:
    """One live subscription, as the subscriptions workflow keeps it."""

    id: str
    name: str
    arguments: dict[str, Any]
    url: str
    secrets: list[str]  # the current secret first; the previous one during its grace
    expires_at: str
    previous_until: str = ""  # until when the previous secret still signs (rotation)
    last_delivery_at: str = ""
    last_error: str = ""
    failed_since: str = ""
    credential: str = ""  # the SHA-256 of the credential that subscribed (or last refreshed)
    failures: int = 0  # failed deliveries in a row
    suspended: bool = False  # after SUSPEND_AFTER_FAILURES of them, until refreshed
    dropped: int = 0  # events not delivered: the principal's deliveries in flight were many

    def hears(self, event: TaskEvent) -> bool:
        """Whether this subscription's name and arguments select `event`."""
        if EVENT_NAMES.get(event.event) != self.name:
            return False
        task_id = self.arguments.get("taskId")
        tool = self.arguments.get("tool")
        return (task_id is None or task_id == event.task_id) and (
            tool is None or tool == event.tool
        )


@dataclass
class SubscriptionsInput:
    """The subscriptions workflow's input: its principal, and what a previous run handed on."""

    principal: str
    subscriptions: list[Subscription] = field(default_factory=list)
    verified_urls: list[str] = field(default_factory=list)
    # When each verified URL was verified (ISO 8601): it is challenged again after a while.
    verified_at: dict[str, str] = field(default_factory=dict)
    max_in_flight: int = 0


@dataclass
class CredentialsRevoked:
    """The SHA-256 of credentials revoked: the subscriptions they made end."""

    credentials: list[str]


@dataclass
class Liveness:
    """The query's answer for one subscription: where and how to deliver, if at all."""

    live: bool
    url: str = ""
    secrets: list[str] = field(default_factory=list)
    expires_at: str = ""


@dataclass
class EventDelivery:
    """One event for one subscription: the delivery workflow's input and its activity's."""

    subscriptions_workflow: str  # the workflow to ask whether the subscription still lives
    subscription_id: str
    event_id: str
    name: str
    timestamp: str
    data: dict[str, Any]


@dataclass
class VerifyInput:
    """The handshake: POST a signed `verification` envelope, expect the challenge back."""

    subscription_id: str
    url: str
    secret: str
    challenge: str
