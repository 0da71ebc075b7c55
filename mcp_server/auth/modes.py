"""The authenticator of MCP_TASKS_AUTH (`none`, `tokens`, `jwt`), built once per process after
the exposure checks; the modes themselves are in authenticators.py and jwt_auth.py."""

from __future__ import annotations

from pathlib import Path

from mcp_server.auth.authenticators import (
    Authenticator,
    LocalUserRefused,
    NoAuthentication,
    TokenAuthentication,
    check_exposure,
)
from mcp_server.auth.jwt_auth import JwtAuthentication
from mcp_tasks.settings import Settings


def build_authenticator(
    settings: Settings, tool_scopes: frozenset[str] = frozenset()
) -> Authenticator:
    """The authenticator of `settings.auth`; `tool_scopes` are the scopes tools declare (the
    protected-resource metadata lists them). ValueError for a configuration that must not
    serve."""
    check_exposure(settings)
    mode = settings.auth
    if mode == "none":
        return NoAuthentication()
    if mode == "tokens":
        if not settings.tokens_file:
            raise ValueError("tokens auth needs MCP_TASKS_TOKENS_FILE")
        return TokenAuthentication(Path(settings.tokens_file))
    if mode == "jwt":
        return LocalUserRefused(JwtAuthentication(settings, tool_scopes))
    raise ValueError(f"unknown auth mode {mode!r}: choose none, tokens or jwt")
