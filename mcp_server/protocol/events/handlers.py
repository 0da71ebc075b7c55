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
  a handshake that fails: CALLBACK_ENDPOINT_ERROR with `data.reason`.
- unsubscribe of a key that holds no subscription: -32602 with `data.kind: "subscription"`.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from mcp_server.protocol.errors import (
    CALLBACK_ENDPOINT_ERROR,
    METHOD_NOT_FOUND,
    QUOTA_EXCEEDED,
    McpError,
    invalid_params,
    task_not_found,
)
from mcp_server.protocol.events import catalog
from mcp_server.protocol.events.models import (
    ListEventsResult,
    SubscribeParams,
    SubscribeResult,
    TaskEventArguments,
    UnsubscribeParams,
)
from mcp_server.protocol.models import CompleteResult, PaginatedParams, parse_params
from mcp_server.tasks.access import find_task
from mcp_tasks.contracts.events import SubscribeInput
from mcp_tasks.webhooks.callback_url import callback_url_problem
from mcp_tasks.webhooks.signature import SecretError, whsec_key

if TYPE_CHECKING:
    from mcp_server.protocol.context import RequestContext, Services


def _offered(ctx: RequestContext, services: Services) -> None:
    if services.events is None or not ctx.modern:
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
        raise invalid_params(f"Unknown event: {name}", {"kind": "event"})
    parsed = parse_params(TaskEventArguments, dict(arguments), where="arguments")
    canonical = parsed.model_dump(by_alias=True, exclude_none=True)
    if parsed.task_id is not None:
        found = await find_task(services.store, parsed.task_id, ctx.principal, services.clock)
        if found is None:
            raise task_not_found()
    return canonical


async def subscribe(
    ctx: RequestContext, services: Services, params: SubscribeParams
) -> SubscribeResult:
    _offered(ctx, services)
    assert services.events is not None
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
    )
    outcome = await services.events.store.subscribe(ctx.principal, request)
    if outcome.error == "limit":
        raise McpError(
            QUOTA_EXCEEDED,
            f"Too many event subscriptions: at most {request.max_subscriptions} per principal",
            {"limit": "subscriptions", "max": request.max_subscriptions},
            http_status=429,
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
    if params.name not in catalog.NAMES:
        raise invalid_params(f"Unknown event: {params.name}", {"kind": "event"})
    arguments = parse_params(TaskEventArguments, dict(params.arguments), where="arguments")
    canonical = arguments.model_dump(by_alias=True, exclude_none=True)
    key = catalog.subscription_id(ctx.principal, params.delivery.url, params.name, canonical)
    if not await services.events.store.unsubscribe(ctx.principal, key):
        raise invalid_params("No such subscription", {"kind": "subscription"})
    return CompleteResult()
