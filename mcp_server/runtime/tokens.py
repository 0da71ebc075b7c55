"""`mcp-tasks token add | list | revoke`: the bearer tokens of `--auth tokens`.

The tokens file keeps each token's SHA-256, never the token, with its principal and scopes:
`{"tokens": [{"sha256": "…", "principal": "alice", "scopes": ["deploy"]}]}`. The token is
printed once. Scopes are scope tokens (RFC 6749 §3.3: visible ASCII without a quote or a
backslash); `--scope` repeats, and each value may hold several, separated by spaces or commas.

- A token's id is the first `ID_LENGTH` hex digits of its SHA-256: `token list` shows ids,
  principals and scopes (never a secret: the file holds none), `token revoke` takes an id (or
  a longer prefix of the SHA-256, naming exactly one token) or `--principal` (all of its
  tokens).
- The principal `anonymous` is reserved for the local user (`--auth none`): refused.
- The file is replaced atomically (a temporary file renamed over it, mode 0600), so a server
  that reads it while it changes sees the old list or the new one, never half of one. The
  server reads it again when it changes: a revoked token, and every inbox session signed in
  with it, stops working at once.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_server.auth.authenticators import token_hash
from mcp_server.tools.registry import SCOPE_TOKEN
from mcp_tasks.identity import reserved_subject

ID_LENGTH = 12


@dataclass(frozen=True)
class TokenEntry:
    """A token as `token list` shows it: never the token, nor its whole hash."""

    token_id: str
    principal: str
    scopes: tuple[str, ...]


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"tokens": []}
    document = json.loads(path.read_text())
    if not isinstance(document, dict) or not isinstance(document.get("tokens"), list):
        raise ValueError(f'{path}: expected {{"tokens": [...]}}')
    return document


def _write(path: Path, document: dict[str, Any]) -> None:
    """Replace `path` atomically with `document`, readable by its owner alone."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(json.dumps(document, indent=2) + "\n")
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def add_token(path: Path, principal: str, scopes: list[str]) -> str:
    """Mint a bearer token for `principal` holding `scopes`; the file keeps only its SHA-256.
    ValueError for an empty or reserved principal or a scope that is not a scope token."""
    if not principal.strip():
        raise ValueError("the principal must not be empty")
    if reserved_subject(principal):
        raise ValueError(f"the principal {principal!r} is reserved for the local user")
    scopes = sorted({s for value in scopes for s in value.replace(",", " ").split()})
    bad = [s for s in scopes if not SCOPE_TOKEN.match(s)]
    if bad:
        raise ValueError(f"not a scope: {bad[0]!r} (visible ASCII, no quote or backslash)")
    document = _read(path)
    token = secrets.token_urlsafe(32)
    document["tokens"].append(
        {"sha256": token_hash(token), "principal": principal, "scopes": scopes}
    )
    _write(path, document)
    return token


def list_tokens(path: Path) -> list[TokenEntry]:
    """The file's tokens, by id, principal and scopes."""
    return [
        TokenEntry(
            str(entry.get("sha256", ""))[:ID_LENGTH],
            str(entry.get("principal", "")),
            tuple(entry.get("scopes", [])),
        )
        for entry in _read(path)["tokens"]
    ]


def revoke_tokens(
    path: Path, token_id: str | None = None, principal: str | None = None
) -> list[TokenEntry]:
    """Remove the token whose SHA-256 starts with `token_id` (at least `ID_LENGTH` hex
    digits, exactly one token), or every token of `principal`; the removed entries.
    ValueError when nothing (or, by id, more than one token) matches."""
    if (token_id is None) == (principal is None):
        raise ValueError("name a token id or a --principal (one of them)")
    document = _read(path)
    entries: list[dict[str, Any]] = document["tokens"]
    if token_id is not None:
        prefix = token_id.strip().lower()
        if len(prefix) < ID_LENGTH:
            raise ValueError(f"a token id has at least {ID_LENGTH} hex digits (token list)")
        gone = [e for e in entries if str(e.get("sha256", "")).startswith(prefix)]
        if len(gone) > 1:
            raise ValueError(f"{token_id!r} names {len(gone)} tokens: give more digits")
    else:
        gone = [e for e in entries if e.get("principal") == principal]
    if not gone:
        what = f"token {token_id!r}" if token_id is not None else f"principal {principal!r}"
        raise ValueError(f"{path}: no {what} to revoke")
    document["tokens"] = [e for e in entries if e not in gone]
    _write(path, document)
    return [
        TokenEntry(str(e["sha256"])[:ID_LENGTH], str(e["principal"]), tuple(e["scopes"]))
        for e in gone
    ]
