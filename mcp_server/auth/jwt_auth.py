"""`--auth jwt`: an OAuth 2.1 resource server (MCP authorization spec).

Rules implemented:
- The signature is verified with a JWKS URL or a configured public key; `iss`, `aud` (this
  server's resource URI), `exp` and `nbf` are checked; only the configured algorithms are
  accepted (never `none`).
- The principal is `sub` (a non-empty string, else 401), plus the client id (`client_id`, else
  `azp`) when the token names one: see `Principal.digest` for how the pair is encoded.
- The token's scopes are its `scope` claim (space-separated), else its `scp` list.
- The challenge names the protected-resource metadata where RFC 9728 puts it for the resource:
  `<origin>/.well-known/oauth-protected-resource<path of the resource>`, e.g.
  `https://mcp.example.com/.well-known/oauth-protected-resource/mcp`, which this server serves.
  With MCP_TASKS_PUBLIC_URL (the server's public base URL) the resource is `<public url>/mcp`.
- Keys from a JWKS URL (mcp_server/auth/jwks.py): each key is kept once fetched (by its `kid`),
  so an outage of the authorization server does not fail tokens signed with a key already
  seen, and a known key never waits on a refresh; an unknown `kid` refreshes the set at most
  once per 10 s (single-flight) and is then refused as "unknown signing key". A token whose
  key cannot be fetched gets 503 with Retry-After, not 401 (the token may well be valid).
- A refusal says what is wrong in a fixed short phrase ("token expired", "bad signature",
  "wrong audience"), never the library's message.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jwt

from mcp_server.auth.authenticators import RESOURCE_METADATA_PATH, AuthError, bearer_token
from mcp_server.auth.jwks import JwksKeys, KeysUnavailable, UnknownSigningKey, http_fetch
from mcp_server.protocol.core.grants import Grant
from mcp_tasks.identity import Principal
from mcp_tasks.settings import Settings

# How long a client should wait when the authorization server's keys cannot be fetched.
JWKS_RETRY_AFTER_S = 30

# Most specific first: several of these are subclasses of others.
_REASONS: list[tuple[type[Exception], str]] = [
    (jwt.ExpiredSignatureError, "token expired"),
    (jwt.ImmatureSignatureError, "token not yet valid"),
    (jwt.InvalidAudienceError, "wrong audience"),
    (jwt.InvalidIssuerError, "wrong issuer"),
    (jwt.InvalidSignatureError, "bad signature"),
    (jwt.InvalidAlgorithmError, "signing algorithm not allowed"),
    (jwt.DecodeError, "malformed token"),
]


def metadata_url(resource: str) -> str:
    """RFC 9728 §3.1: the well-known path goes between the host and the resource's path."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{RESOURCE_METADATA_PATH}{parts.path.rstrip('/')}"


def _public_resource(public_url: str) -> str:
    base = public_url.rstrip("/")
    return base if base.endswith("/mcp") else f"{base}/mcp"


def _scopes(claims: dict[str, Any]) -> frozenset[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    listed = claims.get("scp")
    return frozenset(str(s) for s in listed) if isinstance(listed, list) else frozenset()


class JwtAuthentication:
    def __init__(self, settings: Settings, tool_scopes: frozenset[str] = frozenset()) -> None:
        if not (settings.jwt_issuer and settings.jwt_audience):
            raise ValueError("jwt auth needs MCP_TASKS_JWT_ISSUER and MCP_TASKS_JWT_AUDIENCE")
        algorithms = [a for a in settings.jwt_algorithms if a]
        if not algorithms or any(a.lower() == "none" for a in algorithms):
            raise ValueError("jwt auth needs signing algorithms, and never 'none'")
        self.issuer = settings.jwt_issuer
        self.audience = settings.jwt_audience
        self.algorithms = algorithms
        self.required_scopes = frozenset(settings.jwt_required_scopes)
        self.tool_scopes = tool_scopes
        self.leeway = settings.jwt_leeway_s
        self._key: Any = None
        self._jwks: JwksKeys | None = None
        if settings.jwt_public_key_path:
            self._key = Path(settings.jwt_public_key_path).read_text()
        elif settings.jwt_jwks_url:
            self._jwks = JwksKeys(http_fetch(settings.jwt_jwks_url))
        else:
            raise ValueError(
                "jwt auth needs MCP_TASKS_JWT_JWKS_URL or MCP_TASKS_JWT_PUBLIC_KEY_PATH"
            )
        resource = _public_resource(settings.public_url) if settings.public_url else self.audience
        self._challenge = {"resource_metadata": metadata_url(resource)}

    def _fail(self, description: str, **kwargs: Any) -> AuthError:
        return AuthError(401, description, challenge_params=dict(self._challenge), **kwargs)

    async def _signing_key(self, token: str) -> Any:
        if self._jwks is None:
            return self._key
        kid = jwt.get_unverified_header(token).get("kid")
        try:
            return await self._jwks.key(kid if isinstance(kid, str) else None)
        except KeysUnavailable:
            raise AuthError(
                503,
                "the authorization server's keys cannot be fetched; retry later",
                error="temporarily_unavailable",
                retry_after_s=JWKS_RETRY_AFTER_S,
            ) from None
        except UnknownSigningKey:
            raise self._fail("unknown signing key") from None

    async def authenticate(self, authorization: str | None) -> Principal:
        try:
            token = bearer_token(authorization)
        except AuthError as err:
            raise self._fail(err.description) from None
        try:
            if jwt.get_unverified_header(token).get("alg") not in self.algorithms:
                raise self._fail("signing algorithm not allowed")
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
        except jwt.MissingRequiredClaimError as err:  # one of the four claims required above
            raise self._fail(f"missing claim {err.claim}") from None
        except jwt.PyJWTError as err:
            reason = next((text for kind, text in _REASONS if isinstance(err, kind)), None)
            raise self._fail(reason or "invalid token") from None
        scopes = _scopes(claims)
        if not self.required_scopes <= scopes:
            raise AuthError(
                403,
                "insufficient scope",
                error="insufficient_scope",
                scope=" ".join(sorted(self.required_scopes)),
                challenge_params=dict(self._challenge),
            )
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject.strip():
            raise self._fail("the token has no subject")
        client = claims.get("client_id") or claims.get("azp")
        if client is not None and not isinstance(client, str):
            raise self._fail("malformed client_id")
        expiry = claims.get("exp")
        return Principal(
            subject,
            scopes,
            client=client or None,
            credential=hashlib.sha256(token.encode()).hexdigest(),
            credential_expires_at=float(expiry) if isinstance(expiry, int | float) else None,
        )

    def resource_metadata(self) -> dict[str, Any] | None:
        return {
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": sorted(self.required_scopes | self.tool_scopes),
        }

    def grant(self, principal: Principal) -> Grant:
        return Grant(principal.scopes, self.required_scopes, dict(self._challenge))
