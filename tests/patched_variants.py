"""`ConfirmDelete` (workflows/conformance.py) as a developer would change it next, for
tests/workflows/test_patching.py: a `report()` or an activity added before its question, with and
without `workflow.patched`, each registered under the same workflow type name. A module of its own
and light on imports: the replayer's sandbox imports it to validate each variant."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

PATCH = "check-before-confirm"


@activity.defn(name="tests_check_file")
async def check_file(filename: str) -> bool:
    return True


async def confirm(flow: TaskWorkflow, task: TaskInput) -> ToolResult:
    """ConfirmDelete's body as recorded: one question, then the result."""
    filename = str(task.arguments["filename"])
    answer = await flow.ask(
        "confirm",
        elicitation(
            f"Delete {filename}?",
            {"confirm": {"type": "boolean", "title": f"Delete {filename}"}},
            ["confirm"],
        ),
        status_message=f"Waiting for confirmation to delete {filename}",
    )
    if answer.accepted and answer.content.get("confirm") is True:
        return text_result(f"Deleted {filename}", structured={"deleted": True})
    kept = f"Kept {filename}: deletion was not confirmed"
    return text_result(kept, structured={"deleted": False})


async def check(task: TaskInput) -> None:
    await workflow.execute_activity(
        check_file, str(task.arguments["filename"]), start_to_close_timeout=timedelta(seconds=5)
    )


@task_workflow("ConfirmDelete")
class ReportAddedUnguarded(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        self.report("checking the file")
        return await confirm(self, task)


@task_workflow("ConfirmDelete")
class ReportAddedPatched(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        if workflow.patched(PATCH):
            self.report("checking the file")
        return await confirm(self, task)


@task_workflow("ConfirmDelete")
class ActivityAddedUnguarded(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        await check(task)
        return await confirm(self, task)


@task_workflow("ConfirmDelete")
class ActivityAddedPatched(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        if workflow.patched(PATCH):
            await check(task)
        return await confirm(self, task)


@task_workflow("ConfirmDelete")
class TextsChanged(TaskWorkflow):
    """Other words only: the question, its form, the statusMessage and the result. The memo's
    contents and the result are not compared on replay, so this needs no guard."""

    async def execute(self, task: TaskInput) -> ToolResult:
        answer = await self.ask(
            "confirm",
            elicitation("Really delete it?", {"sure": {"type": "boolean"}}),
            status_message="Asking before deleting",
        )
        return text_result(f"The answer was {answer.action}")
