"""The wire of the events extension (SEP-3415, `io.modelcontextprotocol/events`) this server
serves: `events/list`, `events/subscribe` and `events/unsubscribe` (webhook delivery), parsed at
the edge like every other request (mcp_server/protocol/frame/models.py)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, StrictInt

from mcp_server.protocol.frame.models import JsonObject, Params, WireModel

EVENTS_EXTENSION = "io.modelcontextprotocol/events"


class TaskEventArguments(WireModel):
    """The arguments of every task event type: narrow it to one task, or one tool's tasks."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    task_id: str | None = Field(default=None, alias="taskId", min_length=1, max_length=256)
    tool: str | None = Field(default=None, min_length=1, max_length=128)


class Delivery(WireModel):
    mode: Literal["webhook"] = "webhook"
    url: str = Field(min_length=1)
    secret: str = Field(min_length=1, repr=False)


class DeliveryTarget(WireModel):
    url: str = Field(min_length=1)


class SubscribeParams(Params):
    name: str = Field(min_length=1)
    arguments: JsonObject = Field(default_factory=dict)
    delivery: Delivery
    cursor: str | None = None
    max_age_ms: StrictInt | None = Field(default=None, ge=0)
    # Absent: the server's default lifetime; null: no expiry asked (granted finite here).
    # Strict: `true` is not 1 ms, nor "60000" a minute.
    ttl_ms: StrictInt | None = Field(default=None, ge=0)


class UnsubscribeParams(Params):
    name: str = Field(min_length=1)
    arguments: JsonObject = Field(default_factory=dict)
    delivery: DeliveryTarget


class EventType(WireModel):
    name: str
    description: str
    delivery: list[str]
    input_schema: JsonObject
    payload_schema: JsonObject


class ListEventsResult(WireModel):
    result_type: Literal["complete"] = "complete"
    events: list[EventType]
    next_cursor: str | None = None


class SubscribeResult(WireModel):
    result_type: Literal["complete"] = "complete"
    id: str
    refresh_before: str
    truncated: bool = False
    delivery_status: dict[str, Any] | None = None


class RemoveSubscriptionParams(Params):
    """`events/subscriptions/remove` (this server's addition): one of the caller's own."""

    id: str = Field(min_length=1, max_length=64)


class ListSubscriptionsResult(WireModel):
    """`events/subscriptions/list` (this server's addition): the caller's live subscriptions."""

    result_type: Literal["complete"] = "complete"
    subscriptions: list[dict[str, Any]]
    next_cursor: str | None = None
