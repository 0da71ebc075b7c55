"""What the quota workflow (workflows/quota.py), its activities (activities/quota.py) and the
server's quota client (mcp_server/tasks/quota.py) agree on: the names of the release signal and
of the activities, and their inputs and results."""

from __future__ import annotations

from dataclasses import dataclass

RELEASE_SIGNAL = "mcp.quota.release"
FIND_CLOSED_ACTIVITY = "mcp_tasks.quota_find_closed"
RELEASE_ACTIVITY = "mcp_tasks.quota_release"


@dataclass
class HeldTasks:
    task_ids: list[str]


@dataclass
class FoundTasks:
    closed: list[str]
    missing: list[str]


@dataclass
class ReleaseSlot:
    quota_workflow_id: str
    task_id: str
