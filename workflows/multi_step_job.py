"""Task workflows of the default `demo` toolset."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityCancellationType

from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

with workflow.unsafe.imports_passed_through():
    from activities.multi_step_job import StepInput, run_step


@task_workflow("MultiStepJob")
class MultiStepJobWorkflow(TaskWorkflow):
    """Runs N steps as heartbeating activities, optionally behind a human approval. Steerable
    and pausable: each step boundary is a safe point, and the steer messages it hands over are
    shown in the next step's statusMessage and listed in the result."""

    async def execute(self, task: TaskInput) -> ToolResult:
        steps = int(task.arguments.get("steps", 3))
        step_seconds = float(task.arguments.get("step_seconds", 2))
        name = str(task.arguments.get("name", "job"))
        if task.arguments.get("require_approval", False):
            answer = await self.ask(
                "approve",
                elicitation(
                    f"Run {name!r}: {steps} steps of {step_seconds:g} s each?",
                    {
                        "approve": {"type": "boolean", "title": "Approve"},
                        "comment": {"type": "string", "title": "Comment"},
                    },
                    ["approve"],
                ),
                status_message=f"Waiting for approval to run {name!r}",
            )
            if not answer.accepted or answer.content.get("approve") is not True:
                return text_result(
                    f"{name!r} was not approved; nothing ran",
                    structured={"name": name, "approved": False, "steps": []},
                    is_error=True,
                )
        results = []
        steered: list[dict[str, Any]] = []
        for index in range(1, steps + 1):
            messages = await self.safe_point()
            steered += [{"seq": m.seq, "message": m.message, "beforeStep": index} for m in messages]
            note = f" (steered: {messages[-1].message[:200]})" if messages else ""
            self.report(f"step {index}/{steps} running{note}")
            results.append(
                await workflow.execute_activity(
                    run_step,
                    StepInput(index=index, total=steps, seconds=step_seconds, label=name),
                    start_to_close_timeout=timedelta(seconds=step_seconds * 3 + 30),
                    heartbeat_timeout=timedelta(seconds=5),
                    # A step resumes from its last heartbeat and never fails by itself, so
                    # it is retried until done: with a cap of 5 attempts, a worker that
                    # crashed 5 times (or stalled past the heartbeat timeout) failed the task.
                    retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=10)),
                    # Wait for the activity to acknowledge a cancellation before closing, so
                    # nothing keeps running after the task says `cancelled`.
                    cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                )
            )
        structured: dict[str, Any] = {"name": name, "approved": True, "steps": results}
        if steered:  # only a steered job's result says so: every other result stays as it was
            structured["steering"] = steered
        return text_result(f"{name!r} finished {steps} steps", structured=structured)


WORKFLOWS = [MultiStepJobWorkflow]
