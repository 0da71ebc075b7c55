"""Workflows the steering tests run: a team's workflow that speaks the steering part of the
interactive contract (mcp.steer, mcp.pause, mcp.resume in; mcp.paused out) as a team would
write it with plain temporalio, and a task workflow steered across a continue-as-new."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio import workflow

from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

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


@dataclass
class Asked:
    asked: bool


@task_workflow("TestsSteeredAcrossRuns")
class SteeredAcrossRuns(TaskWorkflow):
    """Asks once, continues as new once answered, then reads its steer messages at a safe
    point: what it was told and whether it was paused survive the new run."""

    async def execute(self, task: TaskInput) -> ToolResult:
        if self.resumed(Asked) is None:
            await self.ask("go", elicitation("Go on?", {"ok": {"type": "boolean"}}))
            self.continue_as_new(Asked(asked=True))
        messages = await self.safe_point()
        return text_result(
            "read", structured={"messages": [[m.seq, m.message, m.by] for m in messages]}
        )
