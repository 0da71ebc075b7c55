"""Links from a task to its workflow in the team's Temporal Web UI (MCP_TASKS_TEMPORAL_UI_URL),
for `tasks show`, `tasks list` and the inbox's task page: the taskId is the workflow id, so an
operator goes from a page or a line to the workflow's history in one click."""

from __future__ import annotations

from urllib.parse import quote


def workflow_url(
    ui_url: str | None, namespace: str, workflow_id: str, run_id: str | None = None
) -> str | None:
    """The Web UI's page of the workflow (of its run, when known); None without a Web UI."""
    if not ui_url:
        return None
    base = f"{ui_url.rstrip('/')}/namespaces/{quote(namespace, safe='')}/workflows/"
    base += quote(workflow_id, safe="")
    return f"{base}/{quote(run_id, safe='')}/history" if run_id else base
