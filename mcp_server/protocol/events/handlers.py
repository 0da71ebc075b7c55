"""`events/list`, `events/subscribe`, `events/unsubscribe` (SEP-3415, webhook mode).

Rules implemented (docs/guides/events.md says why where the draft leaves a choice):
- Offered only at 2026-07-28, by a server with authentication (webhooks need a principal that
  cannot be guessed), a Temporal backend and `MCP_TASKS_EVENTS_MAX_SUBSCRIPTIONS` > 0; else
  every `events/*` request is -32601. `events/poll` and `events/stream` are not served (-32601).
- subscribe: the name must be one of `events/list` (-32602, `data.kind: "event"`), the
  arguments valid for it (-32602), `delivery.url` https with a host (-32602), `delivery.secret`
  `whsec_` and the base64 of 24-64 bytes (-32602, the secret never echoed). A `taskId`
  argument is looked up exactly as tasks/get does (one "not found" for missing, expired and
  another's). Over the principal's limit: QUOTA_EXCEEDED with `data.limit: "subscriptions"`;
  a handshake that fails: CALLBACK_ENDPOINT_ERROR with `data.reason`; a handshake over the
  limits per destination (workflows/event_subscriptions.py, activities/event_handshake.py):
  RATE_LIMITED, nothing POSTed.
- unsubscribe of a key that holds no subscription: -32602 with `data.kind: "subscription"`.
- A subscription is bound to the credential that made it (the last one that refreshed it):
  it ends when that token is revoked, and never outlives a JWT's `exp`.
- subscribe and unsubscribe (and the removal below) spend the principal's events bucket
  (RATE_LIMITED, limits/rates.py); a `taskId` argument's lookup its "not found" bucket.
- This server's additions (the draft has no listing): `events/subscriptions/list` returns
  the caller's live subscriptions (id, name, arguments, delivery URL, refreshBefore,
  deliveryStatus; never a secret) and `events/subscriptions/remove` ends one of them by id
  (an id that is not the caller's: -32602 with `data.kind: "subscription"`).
- Echoed values are cut to `ECHO_CHARS` characters.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from mcp_server.protocol.events import catalog
from mcp_server.protocol.events.models import (
    ListEventsResult,
    ListSubscriptionsResult,
    RemoveSubscriptionParams,
    SubscribeParams,
    SubscribeResult,
    TaskEventArguments,
    UnsubscribeParams,
)
from mcp_server.protocol.frame.errors import (
    CALLBACK_ENDPOINT_ERROR,
    METHOD_NOT_FOUND,
    QUOTA_EXCEEDED,
    McpError,
    invalid_params,
    task_not_found,
)
from mcp_server.protocol.frame.models import CompleteResult, PaginatedParams, parse_params
from mcp_server.protocol.frame.wire import V2026
from mcp_server.protocol.limits.rates import rate_limited
from mcp_server.tasks.access import find_task
from mcp_tasks.contracts.events import HANDSHAKE_LIMITED, SubscribeInput
from mcp_tasks.contracts.task_state import iso_timestamp
from mcp_tasks.webhooks.callback_url import callback_url_problem, destination_of
from mcp_tasks.webhooks.signature import SecretError, whsec_key
from workflows.event_subscriptions import HANDSHAKES_PER_DESTINATION

ECHO_CHARS = 64
HANDSHAKE_RETRY_MS = 60_000


def echoed(value: str) -> str:
    """A caller's value as an error message may repeat it: at most `ECHO_CHARS` characters."""
    return value if len(value) <= ECHO_CHARS else value[:ECHO_CHARS] + "…"


if TYPE_CHECKING:
    from mcp_server.protocol.core.context import RequestContext, Services


def _offered(ctx: RequestContext, services: Services) -> None:
    if services.events is None or ctx.era != V2026:
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {ctx.method}")


async def list_events(
    ctx: RequestContext, services: Services, params: PaginatedParams
) -> ListEventsResult:
    _offered(ctx, services)
    if params.cursor is not None:
        raise invalid_params("Invalid cursor")  # one page holds every event type
    return ListEventsResult(events=catalog.EVENT_TYPES)


async def _arguments(
    ctx: RequestContext, services: Services, name: str, arguments: dict[str, object]
) -> dict[str, object]:
    """The arguments, checked and canonical (only what was given)."""
    if name not in catalog.NAMES:
        raise invalid_params(f"Unknown event: {echoed(name)}", {"kind": "event"})
    parsed = parse_params(TaskEventArguments, dict(arguments), where="arguments")
    canonical = parsed.model_dump(by_alias=True, exclude_none=True)
    if parsed.task_id is not None:
        found = await find_task(
            services.store,
            parsed.task_id,
            ctx.principal,
            services.clock,
            services.limits.rates.misses,
        )
        if found is None:
            raise task_not_found()
    return canonical


async def subscribe(
    ctx: RequestContext, services: Services, params: SubscribeParams
) -> SubscribeResult:
    _offered(ctx, services)
    assert services.events is not None
    services.limits.rates.events.take(ctx.principal)
    arguments = await _arguments(ctx, services, params.name, params.arguments)
    url = params.delivery.url
    problem = callback_url_problem(url)
    if problem is not None:
        raise invalid_params(f"Invalid params: delivery.url {problem}")
    try:
        whsec_key(params.delivery.secret)
    except SecretError as err:
        raise invalid_params(f"Invalid params: delivery.secret {err}") from None
    settings = services.events.settings
    request = SubscribeInput(
        subscription_id=catalog.subscription_id(ctx.principal, url, params.name, arguments),
        name=params.name,
        arguments=arguments,
        url=url,
        secret=params.delivery.secret,
        ttl_s=catalog.granted_ttl_s(settings, params.ttl_ms, "ttl_ms" in params.model_fields_set),
        max_subscriptions=settings.events_max_subscriptions,
        challenge=secrets.token_urlsafe(24),
        credential=ctx.credential,
        credential_expires_at=_stamp(ctx.credential_expires_at),
        max_in_flight=settings.events_max_in_flight,
        destination=destination_of(url),
    )
    outcome = await services.events.store.subscribe(ctx.principal, request)
    if outcome.error == "limit":
        raise McpError(
            QUOTA_EXCEEDED,
            f"Too many event subscriptions: at most {request.max_subscriptions} per principal",
            {"limit": "subscriptions", "max": request.max_subscriptions},
            http_status=429,
        )
    if outcome.error == HANDSHAKE_LIMITED:
        raise rate_limited(
            "Too many endpoint verifications for this destination (host and port); retry later",
            HANDSHAKE_RETRY_MS,
            limit=HANDSHAKES_PER_DESTINATION,
            remaining=0,
        )
    if outcome.error:
        raise McpError(
            CALLBACK_ENDPOINT_ERROR,
            f"The callback endpoint failed verification: {outcome.error}",
            {"reason": outcome.error},
        )
    return SubscribeResult(
        id=request.subscription_id,
        refresh_before=outcome.refresh_before,
        delivery_status=outcome.delivery_status if outcome.refreshed else None,
    )


async def unsubscribe(
    ctx: RequestContext, services: Services, params: UnsubscribeParams
) -> CompleteResult:
    _offered(ctx, services)
    assert services.events is not None
    services.limits.rates.events.take(ctx.principal)
    if params.name not in catalog.NAMES:
        raise invalid_params(f"Unknown event: {echoed(params.name)}", {"kind": "event"})
    arguments = parse_params(TaskEventArguments, dict(params.arguments), where="arguments")
    canonical = arguments.model_dump(by_alias=True, exclude_none=True)
    key = catalog.subscription_id(ctx.principal, params.delivery.url, params.name, canonical)
    if not await services.events.store.unsubscribe(ctx.principal, key):
        raise invalid_params("No such subscription", {"kind": "subscription"})
    return CompleteResult()


async def list_subscriptions(
    ctx: RequestContext, services: Services, params: PaginatedParams
) -> ListSubscriptionsResult:
    _offered(ctx, services)
    assert services.events is not None
    if params.cursor is not None:
        raise invalid_params("Invalid cursor")  # one page: at most the principal's limit
    return ListSubscriptionsResult(subscriptions=await services.events.store.listed(ctx.principal))


async def remove_subscription(
    ctx: RequestContext, services: Services, params: RemoveSubscriptionParams
) -> CompleteResult:
    _offered(ctx, services)
    assert services.events is not None
    services.limits.rates.events.take(ctx.principal)
    # The id names a subscription only within the caller's own workflow: another's id finds
    # nothing, exactly as an id that never existed.
    if not await services.events.store.unsubscribe(ctx.principal, params.id):
        raise invalid_params("No such subscription", {"kind": "subscription"})
    return CompleteResult()


def _stamp(unix: float | None) -> str:
    return "" if unix is None else iso_timestamp(datetime.fromtimestamp(unix, UTC))
