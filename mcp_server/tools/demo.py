"""The default toolset, `demo`: a synchronous tool and task tools of every kind. Each tool is one
name across the three folders: mcp_server/tools/NAME.py declares it, workflows/NAME.py runs it,
activities/NAME.py does its side effects (deploy, import_records, multi_step_job)."""

from __future__ import annotations

from mcp_server.tools import deploy, echo, import_records, multi_step_job, request_approval
from mcp_server.tools.registry import ToolRegistry


def register(registry: ToolRegistry) -> None:
    import_records.register(registry)
    deploy.register(registry)
    echo.register(registry)
    multi_step_job.register(registry)
    request_approval.register(registry)
