"""Who may read and answer a task besides its owner: its approvers.

Rules implemented:
- A caller's `Identity` (mcp_tasks/identity.py) holds its approver ids; the local user
  (`--auth none`, stdio) is one user who holds every scope: it matches every approver.
- A task is found by its owner, and by an approver of any of its requests (for the task's
  whole life, so an approver can read what they decided); by nobody else.
- A request that names approvers is answered only by them (the owner too only when named); a
  request without approvers only by the owner.
- Who may name approvers in a call (`naming_problem`), the operator's policy
  (MCP_TASKS_APPROVER_NAMING): `callers` (anyone), `scope` (a caller holding the naming
  scope), `operator` (no caller: the operator's MCP_TASKS_APPROVAL_APPROVERS and pipeline files
  name them, and win). A caller never names itself, by its subject or by a scope it holds,
  unless MCP_TASKS_APPROVERS_MAY_INCLUDE_CALLER: an agent cannot make itself its own approver.
  The local user (one user, every scope) is exempt from that last rule only: it is everyone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from mcp_tasks.contracts.approvers import (
    SCOPE_PREFIX,
)
from mcp_tasks.identity import Identity


def may_read(
    owner: str, approvers: Mapping[str, Iterable[str]], caller: str, identity: Identity | None
) -> bool:
    """Whether `caller` (a principal digest, with `identity`) may read a task of `owner`."""
    if owner == caller:
        return True
    return identity is not None and identity.approves_any(approvers)


def may_answer(
    key: str, owner: str, approvers: Mapping[str, list[str]], caller: str, identity: Identity
) -> bool:
    """Whether `caller` may answer request `key` of a task of `owner`."""
    named = approvers.get(key)
    if named:
        return identity.approves(named)
    return owner == caller


NamingPolicy = Literal["callers", "scope", "operator"]


@dataclass(frozen=True)
class ApproverNamingRule:
    """The operator's rule for approvers named by callers (not by the operator)."""

    policy: NamingPolicy = "callers"
    # The scope a caller needs under the `scope` policy.
    scope: str = "approvers"
    may_include_caller: bool = False


def naming_problem(
    rule: ApproverNamingRule, named: Iterable[str], identity: Identity
) -> str | None:
    """Why `identity` may not name the approvers `named`; None when it may."""
    names = list(named)
    if rule.policy == "operator":
        return (
            "this server does not let callers name approvers: the operator names them "
            "(MCP_TASKS_APPROVAL_APPROVERS); call without `approvers`"
        )
    if rule.policy == "scope" and not identity.approves([SCOPE_PREFIX + rule.scope]):
        return f"naming approvers needs the scope {rule.scope!r}, which your credential lacks"
    if rule.may_include_caller or identity.every:
        return None
    mine = [name for name in names if identity.approves([name])]
    if mine:
        return (
            f"you may not name yourself as an approver ({', '.join(mine)} is you): an "
            "approver is someone other than the caller"
        )
    return None
