"""The RequestContext of a 2025-11-25 (or older handshake) request: every transport builds it
here.

The era has a handshake: `initialize` negotiates the version and declares the client's
capabilities once, and each later request carries them by its session (HTTP's signed session
id, stdio's connection). A request's own `_meta` holds only its progress token, a string or an
integer; anything else there is not one.
"""

from __future__ import annotations

from typing import Any

import mcp_types as core

from mcp_server.protocol.core.context import RequestContext
from mcp_server.protocol.core.grants import EVERY_SCOPE, Grant
from mcp_server.protocol.frame.routing_headers import HeaderSource
from mcp_tasks.identity import NOBODY, Identity


def context_2025(
    request_id: str | int,
    method: str,
    principal: str,
    headers: HeaderSource,
    *,
    version: str,
    capabilities: core.ClientCapabilities,
    params: dict[str, Any] | None = None,
    session: str | None = None,
    grant: Grant = EVERY_SCOPE,
    identity: Identity = NOBODY,
) -> RequestContext:
    """The context of request `request_id` calling `method` for `principal`, in the session
    that negotiated `version` and declared `capabilities`. `params`: the request's, for its
    progress token. `session`: the digest of the HTTP session (None on stdio). `grant` and
    `identity` are what authentication found (the defaults are the local user's grant and no
    approver)."""
    return RequestContext(
        request_id=request_id,
        method=method,
        capabilities=capabilities,
        principal=principal,
        headers=headers,
        version=version,
        progress_token=_progress_token(params),
        session=session,
        grant=grant,
        identity=identity,
    )


def _progress_token(params: dict[str, Any] | None) -> str | int | None:
    meta = params.get("_meta") if params is not None else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None
