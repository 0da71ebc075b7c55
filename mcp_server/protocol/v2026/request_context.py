"""The RequestContext of a 2026-07-28 request: every transport builds it here.

The era is stateless: what the client can do (its capabilities) and its progress token travel
in each request's `_meta` (`models.RequestMeta`, parsed and checked by the transport first).
A context without `_meta` (the inbox's forms, which answer as `tasks/update` would) declares no
capability and no progress token.
"""

from __future__ import annotations

import mcp_types as core

from mcp_server.protocol.core.context import RequestContext
from mcp_server.protocol.core.grants import EVERY_SCOPE, Grant
from mcp_server.protocol.frame.models import RequestMeta
from mcp_server.protocol.frame.routing_headers import HeaderSource
from mcp_tasks.identity import NOBODY, Identity


def context_2026(
    request_id: str | int,
    method: str,
    principal: str,
    headers: HeaderSource,
    *,
    meta: RequestMeta | None = None,
    grant: Grant = EVERY_SCOPE,
    identity: Identity = NOBODY,
    credential: str = "",
    credential_expires_at: float | None = None,
) -> RequestContext:
    """The context of request `request_id` calling `method` for `principal`. `grant`,
    `identity` and the credential are what authentication found (the defaults are the local
    user's grant, no approver, no credential: stdio's)."""
    return RequestContext(
        request_id=request_id,
        method=method,
        capabilities=core.ClientCapabilities() if meta is None else meta.client_capabilities,
        principal=principal,
        headers=headers,
        progress_token=None if meta is None else meta.progress_token,
        grant=grant,
        identity=identity,
        credential=credential,
        credential_expires_at=credential_expires_at,
    )
