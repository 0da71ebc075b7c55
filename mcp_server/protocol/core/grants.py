"""What a caller's credential allows: its scopes, checked against the scopes a tool declares.

Rules implemented (MCP authorization, runtime insufficient-scope errors; RFC 6750 §3.1):
- A tool may declare scopes (`Tool.scopes`); a `tools/call` of it by a caller whose credential
  lacks one is refused before anything runs (no task, no question asked): HTTP 403 in both
  eras, with `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` naming what the
  call needs (the tool's scopes plus those the server requires of every request, so a new token
  loses nothing), and in `jwt` mode `resource_metadata` so the client can step up.
- The local user (`--auth none`, stdio) holds every scope.
- tools/list lists every tool, whatever the caller's scopes: a client learns of a tool, calls
  it, and gets the challenge that tells it which scope to ask for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mcp_server.protocol.frame.errors import INVALID_REQUEST, McpError


def bearer_challenge(params: Mapping[str, str]) -> str:
    """A `WWW-Authenticate: Bearer` value; quotes and backslashes never reach a value."""
    quoted = (
        f'{key}="{value.replace(chr(92), "/").replace(chr(34), chr(39))}"'
        for key, value in params.items()
    )
    return "Bearer " + ", ".join(quoted)


class InsufficientScope(McpError):
    """A 403 the transport sends with its own HTTP status in every era."""


@dataclass(frozen=True)
class Grant:
    # The credential's scopes; None: every scope (the local user).
    scopes: frozenset[str] | None = None
    # Scopes the server requires of every request (named again in a step-up challenge).
    base_scopes: frozenset[str] = frozenset()
    # Extra challenge parameters, e.g. resource_metadata in jwt mode.
    challenge: Mapping[str, str] = field(default_factory=dict)

    def require(self, needed: frozenset[str], tool: str) -> None:
        """Refuse (InsufficientScope) unless every scope in `needed` is granted."""
        if self.scopes is None or needed <= self.scopes:
            return
        missing = ", ".join(sorted(needed - self.scopes))
        asked = " ".join(sorted(needed | self.base_scopes))
        params = {
            **self.challenge,
            "error": "insufficient_scope",
            "scope": asked,
            "error_description": f"tool {tool} needs scope {missing}",
        }
        raise InsufficientScope(
            INVALID_REQUEST,
            f"Forbidden: tool {tool!r} needs scope {missing}, which your credential lacks",
            {"requiredScopes": sorted(needed)},
            http_status=403,
            headers={"WWW-Authenticate": bearer_challenge(params)},
        )


EVERY_SCOPE = Grant()
NO_SCOPE = Grant(frozenset())
