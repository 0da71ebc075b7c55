"""A team's workflow that speaks the steering part of the interactive contract (mcp.steer,
mcp.pause, mcp.resume in; mcp.paused out), as a team would write it with plain temporalio."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

STEERED_TASK_QUEUE = "tests-steered-team-worker"
STEERED_TOML = f"""
[[tools]]
name = "steered_rollout"
description = "A team's rollout that takes steer messages and can be paused."
workflow = "TestsSteeredRollout"
task_queue = "{STEERED_TASK_QUEUE}"
steering = true
pausable = true
"""


@workflow.defn(name="TestsSteeredRollout")
class SteeredRollout:
    """Waits for two steer messages, holding while paused (it says so to the task workflow,
    its parent); returns the messages as received and how many times it was paused."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.paused = False
        self.pauses = 0

    async def _tell_parent(self, paused: bool) -> None:
        parent = workflow.info().parent
        assert parent is not None
        handle = workflow.get_external_workflow_handle(parent.workflow_id)
        await handle.signal("mcp.paused", {"v": 1, "paused": paused})

    @workflow.signal(name="mcp.steer")
    def steer(self, payload: dict[str, Any]) -> None:
        self.messages.append(payload)

    @workflow.signal(name="mcp.pause")
    async def pause(self, payload: dict[str, Any]) -> None:
        self.paused = True
        self.pauses += 1
        await self._tell_parent(True)

    @workflow.signal(name="mcp.resume")
    async def resume(self, payload: dict[str, Any]) -> None:
        self.paused = False
        await self._tell_parent(False)

    @workflow.run
    async def run(self, arguments: dict[str, Any]) -> dict[str, Any]:
        await workflow.wait_condition(lambda: len(self.messages) >= 2 and not self.paused)
        # Its last mcp.paused reaches the parent before it ends.
        await workflow.wait_condition(workflow.all_handlers_finished)
        return {"messages": self.messages, "pauses": self.pauses}
