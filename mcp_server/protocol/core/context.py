"""What every method handler receives: the request as the transport parsed it, the channel back
to the client for messages related to the request, and the server's services.

A transport builds a RequestContext through its era's factory, never by hand:
`v2026/request_context.py` (2026-07-28) and `v2025/request_context.py` (the handshake era).

Per-request capabilities are authoritative at 2026-07-28; at 2025-11-25 they are the ones the
client declared in `initialize`, carried by its signed session (nothing is kept in memory).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import mcp_types as core

from mcp_server.protocol.core.approver_policy import ApproverPolicy
from mcp_server.protocol.core.grants import EVERY_SCOPE, Grant
from mcp_server.protocol.frame.awaited_answers import AwaitedAnswers
from mcp_server.protocol.frame.relays import Relays
from mcp_server.protocol.frame.request_state import RequestStateCodec
from mcp_server.protocol.frame.routing_headers import HeaderSource
from mcp_server.protocol.frame.wire import PROTOCOL_VERSION, V2025, V2026, Era
from mcp_server.protocol.limits.listen import Listening
from mcp_server.protocol.limits.per_principal import Limits
from mcp_server.tasks.event_subscriptions import EventsService
from mcp_server.tasks.store import TaskStore
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.identity import NOBODY, Identity
from mcp_tasks.webhooks.endpoints import WebhookEndpoints

# Sends one JSON-RPC message (a notification, or at 2025-11-25 a server-to-client request) on
# the response stream of the request being served.
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Services:
    registry: ToolRegistry
    store: TaskStore
    request_state: RequestStateCodec
    clock: Callable[[], datetime]
    server_info: dict[str, Any]
    limits: Limits
    # subscriptions/listen: stream slots, the task watchers of this replica, their limits.
    listening: Listening
    instructions: str | None = None
    # How long a host without task support waits on a task tool before it gets a follow-up
    # result naming the task (the fallback of hosts with no task support).
    sync_wait_s: float = 45.0
    # Whether an approver of a task (not its owner) may cancel it (MCP_TASKS_APPROVERS_MAY_CANCEL).
    approvers_may_cancel: bool = False
    # The webhook endpoints of the operator's file (ids, events, tools; no URL, no secret).
    webhooks: WebhookEndpoints = field(default_factory=WebhookEndpoints)
    # Who may name approvers, and each principal's approver requests (approver_policy.py).
    approvers: ApproverPolicy = field(default_factory=ApproverPolicy.open)
    # The answers this process awaits to its requests of a 2025-11-25 client (v2025/mrtr.py).
    awaited: AwaitedAnswers = field(default_factory=AwaitedAnswers)
    # What this process's calls that relay tasks' questions share (protocol/frame/relays.py).
    relays: Relays = field(default_factory=Relays)
    # Client-subscribed events (protocol/events/); None when the extension is not offered.
    events: EventsService | None = None


async def _nowhere(message: dict[str, Any]) -> None:
    del message  # a JSON response: nothing but the result can be sent


@dataclass(frozen=True)
class RequestContext:
    request_id: str | int
    method: str
    capabilities: core.ClientCapabilities
    # A digest of the authenticated principal; tasks are bound to it.
    principal: str
    headers: HeaderSource
    # The negotiated protocol version: 2026-07-28, or a handshake era's (2025-11-25, ...).
    version: str = PROTOCOL_VERSION
    progress_token: str | int | None = None
    # Messages related to this request (progress, and at 2025-11-25 elicitation requests).
    send: Send = field(default=_nowhere)
    streaming: bool = False
    # A digest of the 2025-11-25 session the request came in (None at 2026-07-28 and on stdio).
    session: str | None = None
    # What the credential allows (its scopes); the local user (stdio) holds every scope.
    grant: Grant = EVERY_SCOPE
    # Who the caller is for approvers (its name and approver ids, tasks/approvers.py); the
    # default is no approver at all, so only a transport that authenticated says otherwise.
    identity: Identity = NOBODY
    # The credential of the request (a token's or a JWT's SHA-256, and a JWT's expiry in Unix
    # seconds): what an event subscription is bound to; "" on stdio and without auth.
    credential: str = ""
    credential_expires_at: float | None = None

    def streaming_to(self, send: Send) -> RequestContext:
        """This request answered on a stream: messages related to it go out by `send` before
        its result."""
        return replace(self, send=send, streaming=True)

    @property
    def era(self) -> Era:
        """The era the request belongs to: 2026-07-28, or the handshake's (2025-11-25 and the
        versions before it)."""
        return V2026 if self.version == PROTOCOL_VERSION else V2025

    def capabilities_dict(self) -> dict[str, Any]:
        """The declared capabilities as JSON, for a workflow's input."""
        return self.capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
