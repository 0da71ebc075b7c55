"""The approver and timeline fields of the task state: written only when
set, read back as written, and malformed values dropped rather than trusted."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mcp_server.tasks.snapshots import snapshot_of
from mcp_tasks.contracts.approvers import (
    MAX_APPROVERS,
    approver_id,
    describe_approvers,
    invalid_approvers,
    outstanding_ids,
)
from mcp_tasks.contracts.task_state import (
    SEARCH_ATTRIBUTE_TYPES,
    SEARCH_ATTRIBUTES,
    SubmitInput,
    TaskInput,
    TaskState,
)
from mcp_tasks.identity import Principal

TASK = TaskInput(
    "mcp-task-1",
    "deploy",
    {},
    "2026-08-01T10:30:00.123Z",
    None,
    500,
    "owner-digest",
    requested_by="dev",
)
STEPS: list[dict[str, Any]] = [
    {
        "name": "build",
        "status": "succeeded",
        "startedAt": "2026-08-01T10:30:01.000Z",
        "endedAt": "2026-08-01T10:30:02.000Z",
        "exitCode": 0,
        "outputTail": "ok",
    },
    {"name": "switch-traffic", "status": "waiting"},
]


def test_the_new_fields_round_trip_through_the_memo() -> None:
    state = replace(
        TaskState.initial(TASK, "Queued"),
        approvers={"approve-switch-traffic": ["release-manager", "scope:release"]},
        answered_by={"approve-switch-traffic": "rm"},
        steps=STEPS,
    )
    memo = state.to_memo()
    assert memo["approvers"] == {"approve-switch-traffic": ["release-manager", "scope:release"]}
    assert memo["answeredBy"] == {"approve-switch-traffic": "rm"}
    assert memo["steps"] == STEPS and memo["requestedBy"] == "dev"
    assert TaskState.from_memo(memo) == state
    snapshot = snapshot_of(state)
    assert snapshot.approvers == state.approvers and snapshot.answered_by == state.answered_by
    assert snapshot.steps == STEPS and snapshot.requested_by == "dev"


def test_a_task_without_them_writes_none_of_their_keys() -> None:
    task = replace(TASK, requested_by="")
    memo = TaskState.initial(task, "Queued").to_memo()
    assert not {"approvers", "answeredBy", "steps", "requestedBy"} & set(memo)
    state = TaskState.from_memo(memo)
    assert state is not None
    assert (state.approvers, state.answered_by, state.steps, state.requested_by) == (
        {},
        {},
        None,
        None,
    )


def test_an_empty_timeline_is_written_as_published() -> None:
    memo = replace(TaskState.initial(TASK, "Queued"), steps=[]).to_memo()
    assert memo["steps"] == []
    state = TaskState.from_memo(memo)
    assert state is not None and state.steps == []


def test_malformed_values_of_the_new_keys_are_dropped() -> None:
    memo: dict[str, Any] = {**TaskState.initial(TASK, "Queued").to_memo()}
    memo.update(
        approvers={"a": ["x", 3], "b": "not a list"},
        answeredBy={"a": "rm", "b": 7},
        steps=[{"name": "x", "status": "exploded"}, "junk", {"name": "y", "status": "failed"}],
        requestedBy=12,
    )
    state = TaskState.from_memo(memo)
    assert state is not None
    assert state.approvers == {"a": ["x"]} and state.answered_by == {"a": "rm"}
    assert state.steps == [{"name": "y", "status": "failed"}] and state.requested_by is None


def test_a_submission_without_a_name_is_still_read_from_an_older_history() -> None:
    assert SubmitInput({"k": {}}).by == ""


def test_mcp_approvers_is_registered_as_a_keyword_list() -> None:
    assert "McpApprovers" in SEARCH_ATTRIBUTES
    assert SEARCH_ATTRIBUTE_TYPES["McpApprovers"] == "KeywordList"
    assert set(SEARCH_ATTRIBUTE_TYPES) == set(SEARCH_ATTRIBUTES)


def test_an_approver_named_by_subject_has_the_id_of_that_principal_without_a_client() -> None:
    assert approver_id("alice") == "principal:" + Principal("alice").digest
    assert approver_id("alice") != "principal:" + Principal("alice", client="app").digest
    assert approver_id("scope:release") == "scope:release"


def test_mcp_approvers_lists_the_approvers_of_outstanding_requests_only() -> None:
    approvers = {"a": ["alice", "scope:ops"], "b": ["bob"]}
    assert outstanding_ids(approvers, ["a"]) == sorted([approver_id("alice"), "scope:ops"])
    assert outstanding_ids(approvers, []) == []


def test_who_may_answer_reads_as_a_sentence() -> None:
    assert describe_approvers(["rm"]) == "rm"
    assert describe_approvers(["rm", "scope:release"]) == "rm or anyone with scope release"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("alice", "array of strings"),
        ([], "at least one"),
        ([""], "non-empty"),
        (["  "], "non-empty"),
        ([7], "non-empty"),
        (["scope:"], "scope name"),
        (["a\nb"], "printable"),
        (["x" * 201], "printable"),
        ([f"p{n}" for n in range(MAX_APPROVERS + 1)], "at most 20"),
    ],
)
def test_a_bad_list_of_approvers_says_what_is_wrong(value: object, why: str) -> None:
    reason = invalid_approvers(value)
    assert reason is not None and why in reason


def test_a_good_list_of_approvers_is_accepted() -> None:
    assert invalid_approvers(["release-manager", "scope:release"]) is None
