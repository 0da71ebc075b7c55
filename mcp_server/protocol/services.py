"""The services every transport hands its handlers (HTTP and stdio build them the same way).

- `serverInfo` names this server on every 2026-07-28 result and in `initialize`.
- The instructions tell a model how tasks work in both eras (`MCP_TASKS_INSTRUCTIONS` replaces
  them).
- `state_secret` keys MRTR `requestState` and 2025-11-25 sessions: every replica must share it.
  It is a list (state_keys.py): the first key signs, any listed verifies, so it rotates. On a
  loopback address a missing one is replaced by a random key (development); anywhere else
  the server refuses to start without one (a random key per replica breaks every session and
  requestState that reaches another replica, and a guessable one lets anyone forge them).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime

from mcp_server.protocol.core.approver_policy import ApproverPolicy
from mcp_server.protocol.core.context import Services
from mcp_server.protocol.frame import state_keys
from mcp_server.protocol.frame.request_state import RequestStateCodec
from mcp_server.protocol.frame.state_keys import StateSecret
from mcp_server.protocol.limits.listen import Listening, StreamSlots
from mcp_server.protocol.limits.per_principal import Limits, PollLimiter
from mcp_server.protocol.limits.rates import RateLimits
from mcp_server.tasks.event_subscriptions import EventsService, SubscriptionStore
from mcp_server.tasks.store import TaskStore
from mcp_server.tasks.watchers import TaskWatchers
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks import __version__
from mcp_tasks.hosts import is_loopback
from mcp_tasks.settings import Settings
from mcp_tasks.webhooks.endpoints import WebhookEndpoints, load_endpoints

log = logging.getLogger("mcp_server.protocol.services")

SERVER_INFO = {"name": "mcp-tasks-temporal", "version": __version__}
DEFAULT_INSTRUCTIONS = (
    "Long-running tools run as durable tasks. With the io.modelcontextprotocol/tasks extension "
    "(2026-07-28) poll tasks/get, answer inputRequests with tasks/update, stop one with "
    "tasks/cancel; with 2025-11-25 tasks use tasks/get, tasks/result and tasks/cancel. Without "
    "tasks, a long call returns a taskId: continue it with task_status, task_respond, task_cancel."
)


def state_secret(settings: Settings) -> tuple[bytes, ...]:
    """The HMAC keys of this server, newest first; a ValueError (one line) on a public address
    without one."""
    if settings.state_secret:
        return state_keys.parse(settings.state_secret)
    if not is_loopback(settings.host):
        raise ValueError(
            f"MCP_TASKS_STATE_SECRET is required to serve on {settings.host} (not loopback): "
            "set it to the same long random value on every replica, e.g. "
            "python3 -c 'import secrets; print(secrets.token_hex(32))'"
        )
    log.warning(
        "MCP_TASKS_STATE_SECRET is not set: using a random key, so MRTR requestState and "
        "2025-11-25 sessions do not survive a restart and are not shared between replicas"
    )
    return (secrets.token_bytes(32),)


def clock() -> datetime:
    """The one clock of every part of a process."""
    return datetime.now(UTC)


def build_services(
    settings: Settings,
    registry: ToolRegistry,
    store: TaskStore,
    secret: StateSecret,
    now: Callable[[], datetime] = clock,
    webhooks: WebhookEndpoints | None = None,
    events: SubscriptionStore | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> Services:
    """The services; `webhooks` defaults to the endpoints of `settings.webhooks_file` (a
    ConfigError when that file is unusable)."""
    if webhooks is None:
        webhooks = load_endpoints(settings.webhooks_file, resolve_secrets=False)
    limits = Limits(
        max_input_responses=settings.max_input_responses,
        max_input_response_bytes=settings.max_input_response_bytes,
        max_open_tasks_per_principal=settings.max_open_tasks_per_principal,
        polls=PollLimiter(settings.poll_rate_factor, settings.poll_burst, monotonic),
        rates=RateLimits.of(settings, monotonic),
    )
    listening = Listening(
        slots=StreamSlots(settings.max_listen_streams_per_principal, settings.max_listen_streams),
        watchers=TaskWatchers(store, now, settings.poll_rate_factor, settings.poll_burst),
        max_task_ids=settings.max_listen_task_ids,
        max_watched_tasks=settings.max_watched_tasks,
    )
    return Services(
        registry=registry,
        store=store,
        request_state=RequestStateCodec(secret),
        clock=now,
        server_info=SERVER_INFO,
        limits=limits,
        listening=listening,
        instructions=settings.instructions or DEFAULT_INSTRUCTIONS,
        sync_wait_s=settings.sync_wait_s,
        approvers_may_cancel=settings.approvers_may_cancel,
        webhooks=webhooks,
        approvers=ApproverPolicy.of(settings),
        events=EventsService(events, settings) if events is not None else None,
    )
