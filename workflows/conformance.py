"""Task workflows behind the fixture tools of the official conformance suite (conformance.md)."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from workflows.results import text_result
from workflows.task_state import TaskInput
from workflows.task_workflow import TaskWorkflow, elicitation, protocol_error, task_workflow


@task_workflow("SlowCompute")
class SlowComputeWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        seconds = float(task.arguments.get("seconds", 0))
        label = str(task.arguments.get("label", ""))
        self.report(f"Computing {label!r} for {seconds:g} s")
        # A durable timer: a cancellation request interrupts it at once.
        await workflow.sleep(seconds)
        return text_result(
            f"Computed {label!r} in {seconds:g} s",
            structured={"label": label, "seconds": seconds},
        )


@task_workflow("FailingJob")
class FailingJobWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        self.report("Running a job that will fail")
        await workflow.sleep(1)
        return text_result("failing_job failed: the simulated job reported an error", is_error=True)


@task_workflow("ProtocolErrorJob")
class ProtocolErrorJobWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        self.report("Running a job that will hit a protocol error")
        await workflow.sleep(0.5)
        raise protocol_error(-32603, "protocol_error_job: simulated internal error")


@task_workflow("ConfirmDelete")
class ConfirmDeleteWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        filename = str(task.arguments["filename"])
        answer = await self.ask(
            "confirm",
            elicitation(
                f"Delete {filename}?",
                {"confirm": {"type": "boolean", "title": f"Delete {filename}"}},
                ["confirm"],
            ),
            status_message=f"Waiting for confirmation to delete {filename}",
        )
        content = answer.get("content") or {}
        if answer.get("action") == "accept" and content.get("confirm") is True:
            return text_result(f"Deleted {filename}", structured={"deleted": True})
        return text_result(
            f"Kept {filename}: deletion was not confirmed", structured={"deleted": False}
        )


@task_workflow("MultiInput")
class MultiInputWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        answers = await self.ask_all(
            {
                "name": elicitation("What is your name?", {"name": {"type": "string"}}, ["name"]),
                "confirm": elicitation(
                    "Do you confirm?", {"confirm": {"type": "boolean"}}, ["confirm"]
                ),
            },
            status_message="Waiting for two answers",
        )
        summary = ", ".join(
            f"{key}: {answers[key].get('action')} {answers[key].get('content')}" for key in answers
        )
        return text_result(f"Received both inputs ({summary})")


@task_workflow("TestToolWithTask")
class TestToolWithTaskWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        answer = task.prelude_responses.get("name") or {}
        name = str((answer.get("content") or {}).get("name", "stranger"))
        self.report(f"Greeting {name}")
        await workflow.sleep(0.5)
        return text_result(f"Hello, {name}! This greeting ran as a durable task.")


WORKFLOWS = [
    SlowComputeWorkflow,
    FailingJobWorkflow,
    ProtocolErrorJobWorkflow,
    ConfirmDeleteWorkflow,
    MultiInputWorkflow,
    TestToolWithTaskWorkflow,
]
