"""The task state in the memo: one typed model, readable across versions, and replay-safe."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer, WorkflowReplayResult

from mcp_server.runtime.worker import workflow_runner
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.contracts import task_state
from mcp_tasks.contracts.task_state import TaskInput, TaskState
from workflows import (
    conformance,
    deploy,
    exposed,
    import_records,
    multi_step_job,
    quota,
    request_approval,
    session_tasks,
)

HISTORIES = Path(__file__).parents[1] / "histories"

# A memo exactly as the server and the workflows wrote it before TaskState existed: running
# workflows carry memos like this one for as long as they live.
WRITTEN_BEFORE: dict[str, Any] = {
    "v": 1,
    "taskId": "mcp-task-0123456789abcdef0123456789abcdef",
    "tool": "confirm_delete",
    "owner": "a1b2c3",
    "createdAt": "2026-08-01T10:30:00.123Z",
    "lastUpdatedAt": "2026-08-01T10:30:02.456Z",
    "ttlMs": 3_600_000,
    "pollIntervalMs": 1000,
    "status": "input_required",
    "statusMessage": "Delete a.txt?",
    "inputRequests": {"confirm": {"method": "elicitation/create", "params": {}}},
}


def test_a_memo_written_before_the_typed_model_reads_back_to_the_same_memo() -> None:
    state = TaskState.from_memo(WRITTEN_BEFORE)
    assert state is not None
    assert state.status == "input_required" and state.owner == "a1b2c3"
    assert state.to_memo() == WRITTEN_BEFORE
    assert list(state.to_memo()) == list(WRITTEN_BEFORE)  # same keys, in the same order


def test_the_initial_state_is_working_with_the_starters_message() -> None:
    task = TaskInput("mcp-task-1", "echo", {}, "2026-08-01T10:30:00.123Z", None, 500, "owner")
    memo = TaskState.initial(task, "Queued").to_memo()
    assert memo["v"] == task_state.MEMO_VERSION and memo["status"] == "working"
    assert memo["lastUpdatedAt"] == memo["createdAt"] and memo["statusMessage"] == "Queued"
    assert memo["ttlMs"] is None and memo["inputRequests"] == {}


def test_a_memo_of_an_earlier_version_stays_readable_after_a_version_bump(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(task_state, "MEMO_VERSION", task_state.MEMO_VERSION + 1)
    state = TaskState.from_memo(WRITTEN_BEFORE)
    assert state is not None and state.task_id == WRITTEN_BEFORE["taskId"]


@pytest.mark.parametrize(
    "memo",
    [
        None,
        "not a memo",
        {**WRITTEN_BEFORE, "v": task_state.MEMO_VERSION + 1},  # from a newer server
        {**WRITTEN_BEFORE, "v": 0},
        {**WRITTEN_BEFORE, "v": True},
        {key: value for key, value in WRITTEN_BEFORE.items() if key != "v"},
        {key: value for key, value in WRITTEN_BEFORE.items() if key != "taskId"},
        {**WRITTEN_BEFORE, "createdAt": 12},
        {**WRITTEN_BEFORE, "status": "paused"},
    ],
)
def test_a_memo_without_a_readable_task_state_is_not_a_task(memo: object) -> None:
    assert TaskState.from_memo(memo) is None


def test_optional_fields_missing_from_a_memo_take_their_defaults() -> None:
    minimal = {"v": 1, "taskId": "mcp-task-1", "createdAt": "2026-08-01T10:30:00.123Z"}
    state = TaskState.from_memo(minimal)
    assert state is not None
    assert (state.status, state.owner) == ("working", "")
    assert state.last_updated_at == minimal["createdAt"]
    assert state.ttl_ms is None and state.input_requests == {}


@pytest.mark.parametrize(
    "history",
    sorted(HISTORIES.rglob("*.json")),
    ids=lambda path: str(path.relative_to(HISTORIES).with_suffix("")),
)
async def test_every_recorded_history_replays_with_todays_workflows(
    registry: ToolRegistry, history: Path
) -> None:
    """Each history is a real run: five recorded with the code before `TaskState`, the rest by
    tests/histories/record.py (every demo workflow and every conformance task workflow, some
    taken while the task still waits, and the open-task quota workflow's under quota/).
    Replaying each with today's workflows proves they still issue the same commands in the same
    order, so a change that would strand an in-flight task fails here, naming the history."""
    workflows = [*registry.workflows, *quota.WORKFLOWS, *session_tasks.WORKFLOWS]
    result = await replay(history, workflows)
    assert result.replay_failure is None


def test_every_task_workflow_that_ships_has_a_recorded_history() -> None:
    """So the replay above covers each one: a new tool's workflow needs a scenario in
    tests/histories/record.py (the open-task quota workflow is not a task workflow)."""
    shipped = [
        *request_approval.WORKFLOWS,
        *conformance.WORKFLOWS,
        *multi_step_job.WORKFLOWS,
        *deploy.WORKFLOWS,
        *exposed.WORKFLOWS,
        *import_records.WORKFLOWS,
    ]
    recorded = {workflow_type(path) for path in HISTORIES.rglob("*.json")}
    names = {str(workflow._Definition.must_from_class(cls).name) for cls in shipped}
    assert len(names) == 15 and sorted(names - recorded) == []


def workflow_type(history: Path) -> str:
    started = json.loads(history.read_text())["events"][0]
    return str(started["workflowExecutionStartedEventAttributes"]["workflowType"]["name"])


async def replay(history: Path, workflows: Sequence[type]) -> WorkflowReplayResult:
    """Replay `history` with the one class of `workflows` declared under its workflow type
    (only that one: a replayer validates every class it is given in the sandbox, seconds each
    on a loaded machine)."""
    name = workflow_type(history)
    (cls,) = [c for c in workflows if workflow._Definition.must_from_class(c).name == name]
    recorded = WorkflowHistory.from_json(history.stem, history.read_text())
    # debug_mode: no 2 s deadlock detector; this checks determinism, and a loaded CI machine
    # once stalled a replay that long (TMPRL1101) with nothing wrong in the workflow.
    replayer = Replayer(workflows=[cls], debug_mode=True, workflow_runner=workflow_runner())
    return await replayer.replay_workflow(recorded, raise_on_replay_failure=False)
