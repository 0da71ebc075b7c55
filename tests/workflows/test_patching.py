"""The replay guard works both ways: a workflow changed without `workflow.patched` fails the
replay of a recorded history with a non-determinism error, and the same change behind
`workflow.patched(...)` replays clean (README: "Changing a tool safely while tasks are in
flight").

The variants (tests/patched_variants.py) are what a developer would write next: `ConfirmDelete`
with a `report()` or an activity added before its question, registered under the same workflow
type name, replayed against histories recorded by tests/histories/record.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio import workflow

from tests.patched_variants import (
    ActivityAddedPatched,
    ActivityAddedUnguarded,
    ReportAddedPatched,
    ReportAddedUnguarded,
    TextsChanged,
)
from tests.workflows.test_task_state import HISTORIES, replay

# Answered and completed, and still waiting for its answer (open): both kinds must hold.
CONFIRM_DELETE = [
    HISTORIES / "conformance_confirm_delete.json",
    HISTORIES / "conformance_confirm_delete_waiting.json",
]


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


@pytest.mark.parametrize("history", CONFIRM_DELETE, ids=lambda path: path.stem)
async def test_changing_only_texts_needs_no_guard(history: Path) -> None:
    result = await replay(history, [TextsChanged])
    assert result.replay_failure is None
