"""Who a caller is: the principal its credential names, and its identity for the approver checks.

- A `Principal` is what authentication yields (mcp_server/auth/): a subject, its scopes, the
  OAuth client the token was issued to. Temporal stores only its `digest` (the memo and the
  McpOwner search attribute), never the subject.
- The local user (`--auth none`, stdio) is `ANONYMOUS`: one user who holds every scope. Its
  name is reserved: no token principal or JWT `sub` may carry it.
- An `Identity` is computed once per request from the principal: its display name (the
  subject) and its approver ids, `principal:<digest of the subject alone>` and `scope:<s>` for
  each scope it holds (mcp_tasks/contracts/approvers.py). The local user matches every approver.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mcp_tasks.contracts.approvers import (
    PRINCIPAL_PREFIX,
    SCOPE_PREFIX,
    approver_ids,
    subject_digest,
)


@dataclass(frozen=True)
class Principal:
    """Who a credential names: a subject, the scopes it holds, the OAuth client it was issued to."""

    subject: str
    scopes: frozenset[str] = frozenset()
    # The OAuth client the token was issued to (jwt `client_id`/`azp`), when it names one.
    client: str | None = None
    # The local user (`--auth none`): every scope.
    every_scope: bool = False
    # The credential that named it, for what it sets up that must end with it (an event
    # subscription): a token's SHA-256, or a JWT's; and a JWT's expiry (Unix seconds).
    # Not part of who the principal is: two tokens of alice are the same alice.
    credential: str = field(default="", compare=False)
    credential_expires_at: float | None = field(default=None, compare=False)

    @property
    def digest(self) -> str:
        """What Temporal stores (memo and the McpOwner search attribute): never the subject.

        Without a client it is the digest of the subject alone (as it always was). With one,
        the pair is encoded as a JSON array in a domain of its own ("principal-client:"), so no
        subject, whatever it holds, can stand for another subject and client."""
        if self.client is None:
            # Also an approver's id (mcp_tasks/contracts/approvers.py).
            return subject_digest(self.subject)
        pair = json.dumps([self.subject, self.client], separators=(",", ":"))
        return hashlib.sha256(f"principal-client:{pair}".encode()).hexdigest()[:32]


# The local user's name: no token principal or JWT `sub` may carry it (see the module doc).
LOCAL_USER_NAME = "anonymous"
ANONYMOUS = Principal(LOCAL_USER_NAME, every_scope=True)


def reserved_subject(subject: str) -> bool:
    """Whether `subject` is the local user's name, which no credential may carry."""
    return subject.strip() == LOCAL_USER_NAME


@dataclass(frozen=True)
class Identity:
    """Who the caller is, for the approver checks (the owner check uses the principal digest)."""

    name: str = ""
    approver_ids: frozenset[str] = frozenset()
    # The local user: one user, every scope, so every approver entry is theirs.
    every: bool = False

    @classmethod
    def of(cls, subject: str, scopes: Iterable[str], every: bool = False) -> Identity:
        ids = {PRINCIPAL_PREFIX + subject_digest(subject)}
        ids.update(SCOPE_PREFIX + scope for scope in scopes)
        return cls(subject, frozenset(ids), every)

    def approves(self, names: Iterable[str]) -> bool:
        """Whether this caller is one of the approvers `names`."""
        return self.every or not self.approver_ids.isdisjoint(approver_ids(names))

    def approves_any(self, approvers: Mapping[str, Iterable[str]]) -> bool:
        """Whether this caller is an approver of any request of a task."""
        return any(self.approves(names) for names in approvers.values())


# No approver at all (a request without an authenticated caller).
NOBODY = Identity()
LOCAL_USER = Identity(LOCAL_USER_NAME, every=True)


def identity_of(principal: Principal) -> Identity:
    """The caller's name and approver ids: its subject alone (whatever OAuth client it uses)
    and each scope it holds; the local user matches every approver."""
    return Identity.of(principal.subject, principal.scopes, every=principal.every_scope)
