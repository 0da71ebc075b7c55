"""Approvers named in a tool call: who may name them, and how many such calls a principal
makes.

Rules implemented:
- A call's `approvers` argument (any tool whose inputSchema declares one) is checked against
  the operator's rule (tasks/approvers.py `naming_problem`: MCP_TASKS_APPROVER_NAMING, its
  scope, and never the caller itself) before anything runs: APPROVERS_NOT_ALLOWED (-31003,
  HTTP 403) naming why. With the `operator` policy the operator's MCP_TASKS_APPROVAL_APPROVERS
  win: a caller cannot replace them.
- Every call about to start a task (after its up-front questions) whose questions wait for
  approvers (named by the caller, or by the tool's own configuration,
  MCP_TASKS_APPROVAL_APPROVERS) spends a token of the caller's approver-request bucket
  (MCP_TASKS_APPROVER_REQUEST_RATE_PER_MINUTE after a burst of
  MCP_TASKS_APPROVER_REQUEST_BURST): RATE_LIMITED (-31000, HTTP 429, Retry-After) when it is
  empty. Each such task fires its webhooks (input_required, then its end) once per question,
  so the bucket bounds the approvers' inbox entries and the webhooks a principal causes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_server.protocol.frame.errors import APPROVERS_NOT_ALLOWED, McpError
from mcp_server.protocol.limits.rates import PrincipalLimiter
from mcp_server.tasks.approvers import ApproverNamingRule, NamingPolicy, naming_problem
from mcp_server.tools.registry import Tool
from mcp_tasks.identity import Identity
from mcp_tasks.settings import Settings


def naming_policy(settings: Settings) -> NamingPolicy:
    """The configured policy; unset, the operator's approvers win when there are any."""
    if settings.approver_naming is not None:
        return settings.approver_naming
    return "operator" if settings.approval_approvers else "callers"


@dataclass(frozen=True)
class ApproverPolicy:
    rule: ApproverNamingRule
    requests: PrincipalLimiter

    @classmethod
    def of(cls, settings: Settings) -> ApproverPolicy:
        rule = ApproverNamingRule(
            naming_policy(settings),
            settings.approver_naming_scope,
            settings.approvers_may_include_caller,
        )
        requests = PrincipalLimiter(
            "requests for approvers (tool calls whose task waits for approvers)",
            settings.approver_request_rate_per_minute,
            settings.approver_request_burst,
        )
        return cls(rule, requests)

    @classmethod
    def open(cls) -> ApproverPolicy:
        """Callers name approvers (never themselves), without a rate limit."""
        return cls(ApproverNamingRule(), PrincipalLimiter("requests for approvers", 0, 1))

    def check(self, identity: Identity, tool: Tool, arguments: dict[str, Any]) -> None:
        """Refuse a call by `identity` naming approvers it may not name (before anything
        runs)."""
        named = _named(tool, arguments)
        problem = naming_problem(self.rule, named, identity) if named else None
        if problem is not None:
            data = {"approvers": named, "policy": self.rule.policy}
            raise McpError(APPROVERS_NOT_ALLOWED, problem, data, http_status=403)

    def count(self, principal: str, tool: Tool, arguments: dict[str, Any]) -> None:
        """Spend `principal`'s (a digest) approver-request token when the task about to start
        waits for approvers; RATE_LIMITED when there is none left."""
        if _named(tool, arguments) or tool.workflow_config.get("approvers"):
            self.requests.take(principal)


def _named(tool: Tool, arguments: dict[str, Any]) -> list[str]:
    """The approvers a call names, when its tool takes an `approvers` argument."""
    properties = tool.input_schema.get("properties")
    if not isinstance(properties, dict) or "approvers" not in properties:
        return []
    named = arguments.get("approvers")
    return [str(name) for name in named] if isinstance(named, list) else []
