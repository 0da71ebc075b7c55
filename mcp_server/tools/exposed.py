"""Tools that start workflows the user's own workers already serve.

The file named by `MCP_TASKS_EXPOSED_WORKFLOWS_FILE` lists them:

[[tools]]
name = "refund_order"                      # the MCP tool
description = "Refund an order"
workflow = "RefundOrder"                   # the workflow type, as registered by its worker
task_queue = "payments"                    # where the user's workers poll
input_schema = { type = "object", properties = { order_id = { type = "string" } } }
positional = ["order_id"]                  # optional: pass these arguments in this order;
                                           # default: the arguments object as one argument
result_path = "receipt"                    # optional: the part of the result to return
ttl_hours = 24                             # optional (default 24)
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mcp_server.tools.registry import Tool, ToolRegistry
from workflows import exposed


def _tool(entry: dict[str, Any], source: Path) -> Tool:
    missing = [key for key in ("name", "workflow", "task_queue") if not entry.get(key)]
    if missing:
        raise ValueError(f"{source}: an exposed workflow needs {missing}")
    config: dict[str, Any] = {
        "workflow": entry["workflow"],
        "task_queue": entry["task_queue"],
        "positional": list(entry.get("positional", [])),
        "result_path": entry.get("result_path"),
    }
    return Tool(
        name=str(entry["name"]),
        description=str(entry.get("description", f"Runs the {entry['workflow']} workflow.")),
        input_schema=entry.get("input_schema", {"type": "object"}),
        task_support="required",
        workflow="ExposedWorkflow",
        ttl_ms=int(float(entry.get("ttl_hours", 24)) * 3_600_000),
        poll_interval_ms=int(entry.get("poll_interval_ms", 2000)),
        workflow_config=config,
    )


def register(registry: ToolRegistry) -> None:
    source = Path(str(registry.settings.exposed_workflows_file))
    entries = tomllib.loads(source.read_text()).get("tools", [])
    registry.add_workflows(exposed.WORKFLOWS)
    for entry in entries:
        registry.add(_tool(entry, source))
