"""`mcp-tasks setup`: make an existing Temporal namespace ready for the server and the worker,
with the same settings they use (MCP_TASKS_TEMPORAL_ADDRESS, _NAMESPACE, TLS or API key).

It checks that the namespace exists, reports its retention against what the tools' longest TTL
needs (a warning when shorter: setup never changes retention), registers the missing search
attributes and prints each change, or `nothing to change`. Idempotent: a second run changes
nothing and says so. Exit codes: 0 ready; 1 bad settings or another error; 3 Temporal cannot be
reached; 4 no such namespace; 5 permission denied (temporal/setup.py).
"""

from __future__ import annotations

import sys

from mcp_server.temporal.connection import connect
from mcp_server.temporal.setup import (
    ClusterProblem,
    check_retention,
    hours,
    register_missing,
    retention_warning,
)
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_TYPES
from mcp_tasks.settings import Settings


async def run_setup(settings: Settings) -> int:
    """Set the namespace up; the exit code (problems: one line on stderr)."""
    registry = load_toolsets(settings.toolset, settings.tool_modules, settings)
    try:
        client = await connect(settings)
        print(f"Temporal {settings.temporal_address}, namespace {settings.namespace}", flush=True)
        check = await check_retention(client, registry.longest_ttl_ms())
        needed = f"{hours(check.needed)} needed" if check.needed else "no tool has a TTL"
        print(
            f"namespace {settings.namespace}: retention {hours(check.kept)} ({needed} by the "
            f"longest tool TTL plus its grace)",
            flush=True,
        )
        if check.short:
            print(f"warning: {retention_warning(settings.namespace, check)}", flush=True)
        registered = await register_missing(client, check.needed)
    except ClusterProblem as problem:
        print(f"mcp-tasks setup: {problem}", file=sys.stderr, flush=True)
        return problem.exit_code
    for name in registered:
        print(f"registered search attribute {name} ({SEARCH_ATTRIBUTE_TYPES[name]})")
    if not registered:
        print("nothing to change")
    return 0
