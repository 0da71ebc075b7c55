"""One structured JSON line per task change (create, update, cancel), on the
`mcp_server.protocol.audit` logger: time, request id, taskId, principal digest, method, outcome.

No arguments, answers or tokens are ever logged. The Temporal history keeps the same facts:
the principal travels in the `mcp.submit_input` and `mcp.cancel_requested` signal payloads.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from mcp_server.protocol.wire import iso_now

log = logging.getLogger("mcp_server.protocol.audit")
AUDITED_METHODS = frozenset({"tools/call", "tasks/update", "tasks/cancel"})


def record(
    *,
    method: str,
    request_id: str | int | None,
    principal: str,
    task_id: str | None,
    outcome: str,
    tool: str | None = None,
) -> None:
    entry: dict[str, Any] = {
        "time": iso_now(),
        "event": "task." + {"tools/call": "create", "tasks/update": "update"}.get(method, "cancel"),
        "method": method,
        "requestId": request_id,
        "taskId": task_id,
        "principal": principal,
        "outcome": outcome,
    }
    if tool is not None:
        entry["tool"] = tool
    log.info(json.dumps(entry, separators=(",", ":")))
