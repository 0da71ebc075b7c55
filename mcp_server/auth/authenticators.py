"""Authentication of every request: the principal (mcp_tasks/identity.py) a task is bound to.

Modes (`MCP_TASKS_AUTH`):
- `none`: the development default. Every caller is the same anonymous principal, the local
  user, who holds every scope; a taskId is a bearer secret. Refused on a non-loopback address
  unless `--insecure` is given, and `--insecure` there needs `MCP_TASKS_ALLOWED_HOSTS` (without
  it any Host header is accepted, so DNS rebinding would reach the server).
- `tokens`: bearer tokens listed in a JSON file by their SHA-256 (the file never holds a token):
  `{"tokens": [{"sha256": "…", "principal": "alice", "scopes": ["deploy"]}]}`;
  `mcp-tasks token add` mints one, `token revoke` removes some. The scopes listed are the
  token's scopes. The file is read again whenever it changes, so a revoked token (or a scope
  taken away) stops working at once, on /mcp and in the inbox (which re-checks its sessions'
  tokens on every request); a file that cannot be read refuses every token (503), never the
  old list.
- `jwt`: an OAuth 2.1 resource server (jwt_auth.py); modes.py builds the one configured.
- The local user's name (`anonymous`) is reserved: a token for that principal is refused when
  minted and when the file is read, and a JWT whose `sub` is that name is refused (401), so no
  credential can stand for the local user or own its tasks.
A missing or bad credential is 401 with `WWW-Authenticate: Bearer …` (in `jwt` mode naming the
protected-resource metadata); more than one Authorization header is 400; a valid token without
the required scopes is 403; keys that cannot be fetched are 503 with Retry-After. The
descriptions are fixed short phrases ("token expired", "bad signature"), never a library's text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from mcp_server.protocol.core.grants import EVERY_SCOPE, Grant, bearer_challenge
from mcp_tasks.hosts import is_loopback
from mcp_tasks.identity import ANONYMOUS, Principal, reserved_subject
from mcp_tasks.settings import Settings

RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
# RFC 6750 §2.1: b64token.
_TOKEN68 = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")


@dataclass
class AuthError(Exception):
    status: int
    description: str
    error: str = "invalid_token"
    scope: str | None = None
    challenge_params: dict[str, str] = field(default_factory=dict)
    retry_after_s: int | None = None

    def www_authenticate(self) -> str:
        params = {**self.challenge_params, "error": self.error}
        params["error_description"] = self.description
        if self.scope:
            params["scope"] = self.scope
        return bearer_challenge(params)

    def headers(self) -> dict[str, str]:
        if self.retry_after_s is not None:
            return {"Retry-After": str(self.retry_after_s)}
        return {"WWW-Authenticate": self.www_authenticate()}


class Authenticator(Protocol):
    async def authenticate(self, authorization: str | None) -> Principal: ...

    def resource_metadata(self) -> dict[str, Any] | None: ...

    def grant(self, principal: Principal) -> Grant: ...


def grant_of(principal: Principal) -> Grant:
    return EVERY_SCOPE if principal.every_scope else Grant(principal.scopes)


def bearer_token(authorization: str | None) -> str:
    if not authorization:
        raise AuthError(401, "a bearer token is required")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not _TOKEN68.match(token.strip()):
        raise AuthError(401, "the Authorization header must be 'Bearer <token>'")
    return token.strip()


class NoAuthentication:
    async def authenticate(self, authorization: str | None) -> Principal:
        return ANONYMOUS

    def resource_metadata(self) -> dict[str, Any] | None:
        return None

    def grant(self, principal: Principal) -> Grant:
        return grant_of(principal)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _entry(path: Path, entry: Any) -> tuple[str, Principal]:
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: each token is an object with sha256, principal, scopes")
    digest = str(entry.get("sha256", "")).lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError(f"{path}: each token needs the 64-hex-digit sha256 of the token")
    principal, scopes = entry.get("principal"), entry.get("scopes", [])
    if not isinstance(principal, str) or not principal:
        raise ValueError(f"{path}: each token needs a principal (a non-empty string)")
    if reserved_subject(principal):
        raise ValueError(f"{path}: the principal {principal!r} is reserved for the local user")
    if not isinstance(scopes, list) or not all(isinstance(s, str) and s for s in scopes):
        raise ValueError(f"{path}: scopes of {principal!r} must be a list of strings")
    return digest, Principal(principal, frozenset(scopes))


def read_tokens(path: Path) -> dict[str, Principal]:
    """The tokens file's principals by token SHA-256 (ValueError when it is malformed)."""
    document = json.loads(path.read_text())
    entries = document.get("tokens", []) if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f'{path}: expected {{"tokens": [...]}}')
    return dict(_entry(path, entry) for entry in entries)


class TokenAuthentication:
    """Tokens by their SHA-256, from a file read again whenever it changes (its size or
    modification time), so a revoked token stops working without a restart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp = self._stat()
        self._by_hash = read_tokens(path)
        # Told of the tokens each re-read finds gone (by SHA-256, with their principals), so
        # what a revoked token set up (its event subscriptions) ends with it.
        self.on_revoked: Callable[[dict[str, Principal]], None] | None = None

    def _stat(self) -> tuple[int, int, int]:
        stat = self.path.stat()
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    def _current(self) -> dict[str, Principal]:
        try:
            stamp = self._stat()
            if stamp != self._stamp:
                previous = self._by_hash
                self._by_hash, self._stamp = read_tokens(self.path), stamp
                gone = {d: p for d, p in previous.items() if d not in self._by_hash}
                if gone and self.on_revoked is not None:
                    self.on_revoked(gone)
        except (OSError, ValueError):
            # Never the old list: it may still hold a token that was just revoked.
            raise AuthError(
                503,
                "the tokens file cannot be read; retry later",
                error="temporarily_unavailable",
                retry_after_s=5,
            ) from None
        return self._by_hash

    def reread(self) -> None:
        """Read the file again if it changed (what a request does), for a server that must
        notice a revocation between requests."""
        self._current()

    def principal_of(self, digest: str) -> Principal | None:
        """The principal of the token whose SHA-256 is `digest` today (None: revoked)."""
        return self._current().get(digest)

    async def authenticate(self, authorization: str | None) -> Principal:
        digest = token_hash(bearer_token(authorization))
        principal = self.principal_of(digest)
        if principal is None:
            raise AuthError(401, "unknown bearer token")
        return replace(principal, credential=digest)

    def resource_metadata(self) -> dict[str, Any] | None:
        return None

    def grant(self, principal: Principal) -> Grant:
        return grant_of(principal)


class LocalUserRefused:
    """An authenticator whose principals never carry the local user's name (a JWT `sub` of
    `anonymous` is 401): wraps jwt mode's."""

    def __init__(self, inner: Authenticator) -> None:
        self.inner = inner

    async def authenticate(self, authorization: str | None) -> Principal:
        principal = await self.inner.authenticate(authorization)
        if reserved_subject(principal.subject):
            raise AuthError(401, "the subject is reserved for the local user")
        return principal

    def resource_metadata(self) -> dict[str, Any] | None:
        return self.inner.resource_metadata()

    def grant(self, principal: Principal) -> Grant:
        return self.inner.grant(principal)

    def __getattr__(self, name: str) -> Any:
        # Whatever else the wrapped authenticator offers (e.g. its JWKS upkeep) stays reachable.
        return getattr(self.inner, name)


def auth_binding(settings: Settings) -> str:
    """What an inbox session is bound to: the mode and a digest of its configuration (the
    tokens file, or the issuer, audience, keys and required scopes), so a cookie issued under
    one configuration is nothing under another."""
    if settings.auth == "none":
        return "none"
    if settings.auth == "tokens":
        where = str(Path(settings.tokens_file).resolve()) if settings.tokens_file else ""
        parts: list[str] = [where]
    else:
        key = settings.jwt_public_key_path
        parts = [
            settings.jwt_issuer or "",
            settings.jwt_audience or "",
            settings.jwt_jwks_url or "",
            str(Path(key).resolve()) if key else "",
            " ".join(sorted(settings.jwt_required_scopes)),
        ]
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]
    return f"{settings.auth}:{digest}"


def check_exposure(settings: Settings) -> None:
    """Refuse (ValueError, one line) a configuration that must not serve on its address."""
    if is_loopback(settings.host):
        return
    if settings.auth == "none" and not settings.insecure:
        raise ValueError(
            f"refusing to serve {settings.host} without authentication: set MCP_TASKS_AUTH "
            "to tokens or jwt, or pass --insecure (anyone who learns a taskId can then "
            "read and steer that task)"
        )
    if settings.insecure and not (settings.allowed_hosts or settings.public_url):
        raise ValueError(
            f"refusing to serve {settings.host} with --insecure and no MCP_TASKS_ALLOWED_HOSTS "
            "or MCP_TASKS_PUBLIC_URL: "
            "any Host header would be accepted, so a web page could reach the server by DNS "
            "rebinding; list the host names clients use (e.g. MCP_TASKS_ALLOWED_HOSTS=mcp.lan)"
        )
