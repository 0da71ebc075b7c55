"""The task state a workflow mirrors into its memo, and the messages a task workflow accepts.

Shared by the MCP server (which reads the memo through `describe()`, no worker needed) and the
workflows (which write it). Pure data: safe to import inside the workflow sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MEMO_KEY = "mcp"
MEMO_VERSION = 1
SUBMIT_INPUT_SIGNAL = "mcp.submit_input"
CANCEL_REQUESTED_SIGNAL = "mcp.cancel_requested"
STATE_QUERY = "mcp.state"
PROTOCOL_ERROR_TYPE = "McpProtocolError"

# Custom search attributes (Keyword). Operators filter with them, e.g.
#   temporal workflow list -q 'McpStatus="input_required"'
SEARCH_ATTRIBUTE_STATUS = "McpStatus"
SEARCH_ATTRIBUTE_TOOL = "McpTool"
SEARCH_ATTRIBUTE_OWNER = "McpOwner"
SEARCH_ATTRIBUTES = (SEARCH_ATTRIBUTE_STATUS, SEARCH_ATTRIBUTE_TOOL, SEARCH_ATTRIBUTE_OWNER)


@dataclass
class TaskInput:
    """What the server hands a task workflow when it starts it."""

    task_id: str
    tool: str
    arguments: dict[str, Any]
    created_at: str
    ttl_ms: int | None
    poll_interval_ms: int
    owner: str
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    # Answers collected by MRTR rounds of tools/call before the task was created.
    prelude_responses: dict[str, Any] = field(default_factory=dict)
    # Names of arguments whose values must never reach the memo, statusMessage or errors.
    secret_arguments: list[str] = field(default_factory=list)
    # Per-tool settings of a generic workflow (e.g. which workflow an exposed tool starts).
    tool_config: dict[str, Any] = field(default_factory=dict)


@dataclass
class SubmitInput:
    """The payload of the `mcp.submit_input` signal that carries a tasks/update."""

    responses: dict[str, Any]
    request_id: str = ""
    principal: str = ""


@dataclass
class AuditStamp:
    """Who asked for a change: kept in the workflow history (payload of a signal)."""

    principal: str
    request_id: str = ""


def initial_memo(task: TaskInput, status_message: str) -> dict[str, Any]:
    return {
        "v": MEMO_VERSION,
        "taskId": task.task_id,
        "tool": task.tool,
        "owner": task.owner,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.created_at,
        "ttlMs": task.ttl_ms,
        "pollIntervalMs": task.poll_interval_ms,
        "status": "working",
        "statusMessage": status_message,
        "inputRequests": {},
    }
