"""The replay guard works both ways: a workflow changed without `workflow.patched` fails the
replay of a recorded history with a non-determinism error, and the same change behind
`workflow.patched(...)` replays clean (README: "Changing a tool safely while tasks are in
flight").

The variants are what a developer would write next: `ConfirmDelete` (workflows/conformance.py)
with a `report()` or an activity added before its question, registered under the same workflow
type name, replayed against histories recorded by tests/histories/record.py.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity, workflow

from tests.test_task_state import HISTORIES, replay
from workflows.results import text_result
from workflows.task_state import TaskInput
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

PATCH = "check-before-confirm"
# Answered and completed, and still waiting for its answer (open): both kinds must hold.
CONFIRM_DELETE = [
    HISTORIES / "conformance_confirm_delete.json",
    HISTORIES / "conformance_confirm_delete_waiting.json",
]


@activity.defn(name="tests_check_file")
async def check_file(filename: str) -> bool:
    return True


async def confirm(flow: TaskWorkflow, task: TaskInput) -> dict[str, Any]:
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
    content = answer.get("content") or {}
    if answer.get("action") == "accept" and content.get("confirm") is True:
        return text_result(f"Deleted {filename}", structured={"deleted": True})
    kept = f"Kept {filename}: deletion was not confirmed"
    return text_result(kept, structured={"deleted": False})


async def check(task: TaskInput) -> None:
    await workflow.execute_activity(
        check_file, str(task.arguments["filename"]), start_to_close_timeout=timedelta(seconds=5)
    )


@task_workflow("ConfirmDelete")
class ReportAddedUnguarded(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        self.report("checking the file")
        return await confirm(self, task)


@task_workflow("ConfirmDelete")
class ReportAddedPatched(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        if workflow.patched(PATCH):
            self.report("checking the file")
        return await confirm(self, task)


@task_workflow("ConfirmDelete")
class ActivityAddedUnguarded(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        await check(task)
        return await confirm(self, task)


@task_workflow("ConfirmDelete")
class ActivityAddedPatched(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        if workflow.patched(PATCH):
            await check(task)
        return await confirm(self, task)


@pytest.mark.parametrize("history", CONFIRM_DELETE, ids=lambda path: path.stem)
@pytest.mark.parametrize("variant", [ReportAddedUnguarded, ActivityAddedUnguarded])
async def test_a_change_without_patched_fails_the_replay_of_a_recorded_task(
    variant: type, history: Path
) -> None:
    result = await replay(history, [variant])
    assert isinstance(result.replay_failure, workflow.NondeterminismError), result.replay_failure
    assert "Nondeterminism" in str(result.replay_failure)


@pytest.mark.parametrize("history", CONFIRM_DELETE, ids=lambda path: path.stem)
@pytest.mark.parametrize("variant", [ReportAddedPatched, ActivityAddedPatched])
async def test_the_same_change_under_patched_replays_clean(variant: type, history: Path) -> None:
    result = await replay(history, [variant])
    assert result.replay_failure is None
