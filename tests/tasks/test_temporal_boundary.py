"""Inside mcp_server/, only the tasks layer talks to Temporal, behind its `Protocol`s (`TaskStore`,
`InboxStore`, `TaskBackend`, ...; STYLE.md): no other module imports temporalio's `Client` or
calls its raw services, but for the processes that make the client and hand it to the tasks
layer (docs/contributing/layout.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What makes the client: the processes, the HTTP app and the stdio server, and the connection.
ROOTS = (
    "mcp_server/tasks/",
    "mcp_server/runtime/",
    "mcp_server/temporal/",
    "mcp_server/http/app.py",
    "mcp_server/stdio/server.py",
)
RAW_SERVICES = {"workflow_service", "operator_service", "service_client"}


def talks_to_temporal(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "temporalio.client":
            if any(alias.name == "Client" for alias in node.names):
                return True
        if isinstance(node, ast.Attribute) and node.attr in RAW_SERVICES:
            return True
    return False


def test_only_the_tasks_layer_and_the_processes_hold_a_temporal_client() -> None:
    offending = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "mcp_server").rglob("*.py")
        if not path.relative_to(ROOT).as_posix().startswith(ROOTS)
        and talks_to_temporal(ast.parse(path.read_text()))
    }
    assert offending == set()
