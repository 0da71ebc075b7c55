"""Approvers: who, other than the caller, answers a task's input request.

Pure functions, shared by the workflows (which store approver ids in the `McpApprovers` search
attribute) and the server (which compares them with the caller's ids). Safe to import inside
the workflow sandbox.

Rules implemented:
- An approver is named by a string: a principal's subject (`alice`, a token's `principal`, a
  JWT `sub`) or `scope:<name>` (anyone whose credential holds that scope).
- The id of a name, as Temporal's visibility stores it: `principal:<digest of the subject>`
  (the digest the owner of a task is stored by, without a client) or `scope:<name>` as given.
  Temporal never sees a subject.
- A list of approvers is non-empty strings, each at most `MAX_NAME_LENGTH` printable
  characters, at most `MAX_APPROVERS` of them; `scope:` needs a scope name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

SCOPE_PREFIX = "scope:"
PRINCIPAL_PREFIX = "principal:"
MAX_APPROVERS = 20
MAX_NAME_LENGTH = 200
# The JSON Schema of an `approvers` argument (what `invalid_approvers` accepts).
APPROVERS_SCHEMA: dict[str, object] = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_APPROVERS,
    "items": {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_NAME_LENGTH,
        # Printable, not blank.
        "pattern": "^[^\\x00-\\x1f\\x7f]*\\S[^\\x00-\\x1f\\x7f]*$",
        "not": {"const": "scope:"},
    },
    "description": "Who decides: principals (e.g. release-manager) or scope:NAME",
}


def subject_digest(subject: str) -> str:
    """The digest a principal without an OAuth client is stored by (McpOwner, the memo)."""
    return hashlib.sha256(f"principal:{subject}".encode()).hexdigest()[:32]


def approver_id(name: str) -> str:
    """The id of approver `name` in the `McpApprovers` search attribute."""
    if name.startswith(SCOPE_PREFIX):
        return name
    return PRINCIPAL_PREFIX + subject_digest(name)


def approver_ids(names: Iterable[str]) -> list[str]:
    """The ids of `names`, sorted, without duplicates."""
    return sorted({approver_id(name) for name in names})


def outstanding_ids(
    approvers: Mapping[str, Iterable[str]], outstanding: Iterable[str]
) -> list[str]:
    """The ids of the approvers of the `outstanding` request keys (McpApprovers' value)."""
    return approver_ids(name for key in outstanding for name in approvers.get(key, ()))


def invalid_approvers(value: object) -> str | None:
    """Why `value` is not a list of approver names; None when it is one."""
    if not isinstance(value, list):
        return "approvers must be an array of strings"
    if not value:
        return "approvers must name at least one approver"
    if len(value) > MAX_APPROVERS:
        return f"approvers names {len(value)} approvers; at most {MAX_APPROVERS} are allowed"
    for name in value:
        if not isinstance(name, str) or not name.strip():
            return "every approver must be a non-empty string"
        if len(name) > MAX_NAME_LENGTH or not name.isprintable():
            return f"approver names are printable and at most {MAX_NAME_LENGTH} characters"
        if name == SCOPE_PREFIX:
            return "'scope:' must be followed by a scope name, e.g. 'scope:release'"
    return None


def describe_approvers(names: Iterable[str]) -> str:
    """`release-manager or anyone with scope release`: who may answer, for people."""
    parts = [
        f"anyone with scope {name[len(SCOPE_PREFIX) :]}" if name.startswith(SCOPE_PREFIX) else name
        for name in names
    ]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " or " + parts[-1]
