"""`mcp-tasks token add`: mint a bearer token for `--auth tokens`.

The tokens file keeps each token's SHA-256, never the token, with its principal and scopes:
`{"tokens": [{"sha256": "…", "principal": "alice", "scopes": ["deploy"]}]}`. The token is
printed once. Scopes are scope tokens (RFC 6749 §3.3: visible ASCII without a quote or a
backslash); `--scope` repeats, and each value may hold several, separated by spaces or commas.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from mcp_server.http.auth import token_hash
from mcp_server.tools.registry import SCOPE_TOKEN


def add_token(path: Path, principal: str, scopes: list[str]) -> str:
    """Mint a bearer token for `principal` holding `scopes`; the file keeps only its SHA-256.
    ValueError for an empty principal or a scope that is not a scope token."""
    if not principal.strip():
        raise ValueError("the principal must not be empty")
    scopes = sorted({s for value in scopes for s in value.replace(",", " ").split()})
    bad = [s for s in scopes if not SCOPE_TOKEN.match(s)]
    if bad:
        raise ValueError(f"not a scope: {bad[0]!r} (visible ASCII, no quote or backslash)")
    document = json.loads(path.read_text()) if path.exists() else {"tokens": []}
    token = secrets.token_urlsafe(32)
    document["tokens"].append(
        {"sha256": token_hash(token), "principal": principal, "scopes": scopes}
    )
    path.write_text(json.dumps(document, indent=2) + "\n")
    path.chmod(0o600)
    return token
