"""Upgrading the worker while a task waits for its answer (README: "Changing a tool safely while
tasks are in flight").

An approval task starts on the "old" code (V1 of workflow type `TestsUpgradeApproval`) and parks
at input_required. Its worker stops: the server still answers tasks/get from the memo. A worker
with V2 (the same type, changed under `workflow.patched`: a report() after the answer and a new
result text) takes over; the answer arrives through tasks/update; the old task replays on V2,
takes the old branch and completes as V1 would have. A task started on V2 takes the new branch.
"""

from __future__ import annotations

import json
from typing import Any

from temporalio.client import Client

from tests.conftest import running_stack
from tests.mcp_client import McpClient
from tests.upgrade_workflows import PATCH, TOOL, ApprovalV1, ApprovalV2, registry_with
from workflows.task_workflow import WAITING_SINCE_PATCH

APPROVE = {"approve": {"action": "accept", "content": {"approve": True}}}


async def answered(mcp: McpClient, task_id: str) -> dict[str, Any]:
    update = await mcp.update_task(task_id, APPROVE)
    assert "error" not in update.body, update.body
    done = await mcp.wait_terminal(task_id, within=30)
    assert done["status"] == "completed", done
    return dict(done["result"])


async def test_a_task_parked_on_old_code_completes_on_the_upgraded_worker(
    temporal_client: Client,
) -> None:
    async with running_stack(temporal_client, registry_with(ApprovalV1)) as stack:
        mcp = stack.mcp
        old_task = await mcp.create_task(TOOL)
        await mcp.wait_status(old_task, "input_required")

        await stack.stop_worker()
        # No worker runs: tasks/get still reads the task from the memo Temporal keeps.
        parked = (await mcp.get_task(old_task)).result
        assert parked["status"] == "input_required" and "approve" in parked["inputRequests"]

        # The upgrade: the same task queue, the same workflow type, V2's code.
        stack.registry = registry_with(ApprovalV2)
        await stack.start_worker()

        result = await answered(mcp, old_task)
        assert result["content"][0]["text"] == "v1: approved=True"
        assert result["structuredContent"] == {"version": 1}

        new_task = await mcp.create_task(TOOL)
        await mcp.wait_status(new_task, "input_required")
        result = await answered(mcp, new_task)
        assert result["content"][0]["text"] == "v2: approved=True"
        history = await stack.client.get_workflow_handle(new_task).fetch_history()
        markers = [
            e.marker_recorded_event_attributes
            for e in history.events
            if e.HasField("marker_recorded_event_attributes")
        ]
        # The patch markers: the new branch is recorded as taken, and so is the base's
        # McpWaitingSince upsert (WAITING_SINCE_PATCH); no quota release: far from the limit
        # the task's slot is lazy, workflows/quota.py.
        assert [m.marker_name for m in markers] == ["core_patch"] * 2, markers
        patches = [json.loads(m.details["patch-data"].payloads[0].data)["id"] for m in markers]
        assert sorted(patches) == sorted([PATCH, WAITING_SINCE_PATCH]), patches
