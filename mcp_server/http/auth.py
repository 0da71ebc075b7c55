"""Authentication of every request, and the principal a task is bound to.

Modes (`MCP_TASKS_AUTH`):
- `none`: the development default. Every caller is the same anonymous principal, so a taskId is
  a bearer secret. Refused on a non-loopback address unless `--insecure` is given.
- `tokens`: bearer tokens listed in a JSON file by their SHA-256 (the file never holds a token):
  `{"tokens": [{"sha256": "…", "principal": "alice", "scopes": ["tasks"]}]}`;
  `mcp-tasks token add` mints one.
- `jwt`: an OAuth 2.1 resource server (MCP authorization spec): the signature is verified with a
  JWKS URL or a configured public key, `iss`, `aud` (this server's resource URI), `exp` and
  `nbf` are checked, only the configured algorithms are accepted (never `none`); the principal
  is `sub`, plus the client id when the token names one.
A missing or bad credential is 401 with `WWW-Authenticate: Bearer …` (in `jwt` mode naming the
protected-resource metadata); a valid token without the required scopes is 403.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import jwt

from mcp_server.http.origin import is_loopback
from mcp_server.runtime.config import Settings

RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True)
class Principal:
    subject: str
    scopes: frozenset[str] = frozenset()

    @property
    def digest(self) -> str:
        """What Temporal stores (memo and the McpOwner search attribute): never the subject."""
        return hashlib.sha256(f"principal:{self.subject}".encode()).hexdigest()[:32]


ANONYMOUS = Principal("anonymous")


@dataclass
class AuthError(Exception):
    status: int
    description: str
    error: str = "invalid_token"
    scope: str | None = None
    challenge_params: dict[str, str] = field(default_factory=dict)

    def www_authenticate(self) -> str:
        params = {**self.challenge_params, "error": self.error}
        params["error_description"] = self.description.replace('"', "'")
        if self.scope:
            params["scope"] = self.scope
        return "Bearer " + ", ".join(f'{key}="{value}"' for key, value in params.items())


class Authenticator(Protocol):
    async def authenticate(self, authorization: str | None) -> Principal: ...

    def resource_metadata(self) -> dict[str, Any] | None: ...


def bearer_token(authorization: str | None) -> str:
    if not authorization:
        raise AuthError(401, "a bearer token is required")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError(401, "the Authorization header must be 'Bearer <token>'")
    return token.strip()


class NoAuthentication:
    async def authenticate(self, authorization: str | None) -> Principal:
        return ANONYMOUS

    def resource_metadata(self) -> dict[str, Any] | None:
        return None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenAuthentication:
    def __init__(self, path: Path) -> None:
        entries = json.loads(path.read_text()).get("tokens", [])
        self._by_hash: dict[str, Principal] = {}
        for entry in entries:
            digest = str(entry["sha256"]).lower()
            if len(digest) != 64:
                raise ValueError(f"{path}: each token needs the 64-hex-digit sha256 of the token")
            self._by_hash[digest] = Principal(
                str(entry["principal"]), frozenset(entry.get("scopes", []))
            )

    async def authenticate(self, authorization: str | None) -> Principal:
        principal = self._by_hash.get(token_hash(bearer_token(authorization)))
        if principal is None:
            raise AuthError(401, "unknown bearer token")
        return principal

    def resource_metadata(self) -> dict[str, Any] | None:
        return None


_JWT_REASONS: list[tuple[type[Exception], str]] = [
    (jwt.ExpiredSignatureError, "the token has expired"),
    (jwt.ImmatureSignatureError, "the token is not valid yet"),
    (jwt.InvalidAudienceError, "the token is not meant for this resource (aud)"),
    (jwt.InvalidIssuerError, "the token comes from an untrusted issuer (iss)"),
    (jwt.InvalidSignatureError, "the token signature is invalid"),
    (jwt.MissingRequiredClaimError, "the token lacks a required claim"),
]


class JwtAuthentication:
    def __init__(self, settings: Settings) -> None:
        if not (settings.jwt_issuer and settings.jwt_audience):
            raise ValueError("jwt auth needs MCP_TASKS_JWT_ISSUER and MCP_TASKS_JWT_AUDIENCE")
        algorithms = [a for a in settings.jwt_algorithms if a]
        if not algorithms or any(a.lower() == "none" for a in algorithms):
            raise ValueError("jwt auth needs signing algorithms, and never 'none'")
        self.issuer = settings.jwt_issuer
        self.audience = settings.jwt_audience
        self.algorithms = algorithms
        self.required_scopes = frozenset(settings.jwt_required_scopes)
        self.leeway = settings.jwt_leeway_s
        self._key: Any = None
        self._jwks: jwt.PyJWKClient | None = None
        if settings.jwt_public_key_path:
            self._key = Path(settings.jwt_public_key_path).read_text()
        elif settings.jwt_jwks_url:
            self._jwks = jwt.PyJWKClient(settings.jwt_jwks_url, cache_keys=True, lifespan=300)
        else:
            raise ValueError(
                "jwt auth needs MCP_TASKS_JWT_JWKS_URL or MCP_TASKS_JWT_PUBLIC_KEY_PATH"
            )
        self._challenge = {
            "resource_metadata": f"{self.audience.rstrip('/')}{RESOURCE_METADATA_PATH}"
        }
        if settings.public_url:
            self._challenge["resource_metadata"] = (
                f"{settings.public_url.rstrip('/')}{RESOURCE_METADATA_PATH}"
            )

    def _fail(self, description: str, **kwargs: Any) -> AuthError:
        return AuthError(401, description, challenge_params=dict(self._challenge), **kwargs)

    async def _signing_key(self, token: str) -> Any:
        if self._jwks is None:
            return self._key
        # PyJWKClient fetches (and caches) the JWKS with blocking I/O: keep it off the loop.
        signing_key = await asyncio.to_thread(self._jwks.get_signing_key_from_jwt, token)
        return signing_key.key

    async def authenticate(self, authorization: str | None) -> Principal:
        try:
            token = bearer_token(authorization)
        except AuthError as err:
            raise self._fail(err.description) from None
        try:
            if jwt.get_unverified_header(token).get("alg") not in self.algorithms:
                raise self._fail("the token's signing algorithm is not allowed")
            claims = jwt.decode(
                token,
                await self._signing_key(token),
                algorithms=self.algorithms,
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except AuthError:
            raise
        except jwt.PyJWTError as err:
            reason = next((text for kind, text in _JWT_REASONS if isinstance(err, kind)), None)
            raise self._fail(reason or f"invalid token: {err}") from None
        scopes = _scopes(claims)
        if not self.required_scopes <= scopes:
            raise AuthError(
                403,
                "the token lacks a required scope",
                error="insufficient_scope",
                scope=" ".join(sorted(self.required_scopes)),
                challenge_params=dict(self._challenge),
            )
        client = claims.get("client_id") or claims.get("azp")
        subject = f"{claims['sub']}|{client}" if client else str(claims["sub"])
        return Principal(subject, scopes)

    def resource_metadata(self) -> dict[str, Any] | None:
        return {
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": sorted(self.required_scopes),
        }


def _scopes(claims: dict[str, Any]) -> frozenset[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    listed = claims.get("scp")
    return frozenset(str(s) for s in listed) if isinstance(listed, list) else frozenset()


def build_authenticator(settings: Settings) -> Authenticator:
    mode = settings.auth
    if mode == "none":
        if not is_loopback(settings.host) and not settings.insecure:
            raise ValueError(
                f"refusing to serve {settings.host} without authentication: set MCP_TASKS_AUTH "
                "to tokens or jwt, or pass --insecure (anyone who learns a taskId can then "
                "read and steer that task)"
            )
        return NoAuthentication()
    if mode == "tokens":
        if not settings.tokens_file:
            raise ValueError("tokens auth needs MCP_TASKS_TOKENS_FILE")
        return TokenAuthentication(Path(settings.tokens_file))
    if mode == "jwt":
        return JwtAuthentication(settings)
    raise ValueError(f"unknown auth mode {mode!r}: choose none, tokens or jwt")
