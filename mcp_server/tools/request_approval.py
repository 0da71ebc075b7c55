"""`request_approval`: a human decision that may take days (workflows/request_approval.py)."""

from __future__ import annotations

from typing import Any

from mcp_server.tools.registry import Tool, ToolRegistry
from mcp_tasks.contracts.approvers import APPROVERS_SCHEMA
from workflows import request_approval

DAY_MS = 24 * 60 * 60 * 1000
APPROVAL_TTL_MS = 30 * DAY_MS
MAX_DEADLINE_S = 29 * 24 * 3600  # the TTL outlives the longest deadline by a day


# Nullable as `anyOf` branches of one type each, not a `["string", "null"]` type array: the
# same contract, which schema-checking clients (the MCP Inspector) accept without a portability
# warning.
_STRING_OR_NULL: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "null"}]}


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(request_approval.WORKFLOWS)
    default_approvers = list(registry.settings.approval_approvers)
    registry.add(
        Tool(
            "request_approval",
            "Asks a human to approve or reject, and waits (for days if need be). With "
            "`deadline_seconds`, resolves as `expired` when nobody has decided by then. With "
            "`approvers` (principals, or `scope:NAME` for anyone holding that scope), only "
            "they decide, with their own credentials; the caller cannot.",
            {
                "type": "object",
                "properties": {
                    "message": {"type": "string", "minLength": 1, "maxLength": 4000},
                    "require_reason": {"type": "boolean"},
                    "deadline_seconds": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_DEADLINE_S,
                    },
                    "approvers": APPROVERS_SCHEMA,
                },
                "required": ["message"],
            },
            output_schema={
                "type": "object",
                "properties": {
                    "decision": {"enum": ["approved", "rejected", "expired", "dismissed"]},
                    "reason": _STRING_OR_NULL,
                    "decidedBy": _STRING_OR_NULL,
                    "decidedByName": _STRING_OR_NULL,
                    "waitedSeconds": {"type": "number"},
                },
                "required": ["decision", "reason", "decidedBy", "waitedSeconds"],
            },
            task_support="optional",
            workflow="RequestApproval",
            ttl_ms=APPROVAL_TTL_MS,
            poll_interval_ms=5000,
            # No capability is required of the caller: a client that cannot show the form
            # leaves the request to the inbox, `mcp-tasks tasks answer` or the approvers
            # (docs/concepts/state-machine.md, "Questions the caller cannot answer").
            workflow_config={"approvers": default_approvers} if default_approvers else {},
        )
    )
