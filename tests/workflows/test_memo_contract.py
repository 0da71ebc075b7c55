"""One typed contract between the workflows and the server: the task state in the memo is built
only by `TaskState.to_memo()` and read only by `TaskState.from_memo()`
(mcp_tasks/contracts/task_state.py).

A static check over the code that ships (mcp_server, workflows, activities): every memo write
(`upsert_memo(...)`, `start_workflow(..., memo=...)`) and every memo read (`memo_value(...)`)
goes through TaskState, and nothing decodes a whole memo by hand (`.memo()`).
"""

from __future__ import annotations

import ast
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest

from mcp_server.tasks.snapshots import TaskSnapshot, snapshot_of
from mcp_tasks.contracts.task_state import TaskState

ROOT = Path(__file__).parents[2]
SHIPPED = ["mcp_server", "workflows", "activities"]
CONTRACT = ROOT / "mcp_tasks" / "contracts" / "task_state.py"


def modules() -> list[Path]:
    return sorted(
        path for package in SHIPPED for path in (ROOT / package).rglob("*.py") if path != CONTRACT
    )


def is_call_of(node: ast.AST | None, method: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
    )


def violations(source: str) -> list[str]:
    """Every place in `source` that touches the memo other than through TaskState."""
    tree = ast.parse(source)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    # Names bound to a to_memo() result (e.g. `memo = TaskState.initial(...).to_memo()`).
    built = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and is_call_of(node.value, "to_memo")
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    allowed: set[ast.AST] = set()  # the MEMO_KEY names used the way the contract says
    found: list[str] = []

    def written(memo: ast.AST, line: int) -> None:
        if not isinstance(memo, ast.Dict):
            found.append(f"line {line}: a memo that is not a {{MEMO_KEY: ....to_memo()}} literal")
            return
        for key, value in zip(memo.keys, memo.values, strict=True):
            typed = is_call_of(value, "to_memo") or (
                isinstance(value, ast.Name) and value.id in built
            )
            if not (isinstance(key, ast.Name) and key.id == "MEMO_KEY" and typed):
                found.append(f"line {line}: a memo entry not built by TaskState.to_memo()")
            elif key is not None:
                allowed.add(key)

    for node in ast.walk(tree):
        if is_call_of(node, "upsert_memo") and isinstance(node, ast.Call):
            for argument in node.args:
                written(argument, node.lineno)
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "memo":
                    written(keyword.value, node.lineno)
        if is_call_of(node, "memo") and isinstance(node, ast.Call):
            found.append(f"line {node.lineno}: .memo() decodes the whole memo by hand")
        if is_call_of(node, "memo_value") and isinstance(node, ast.Call):
            outer = parents.get(node)
            outer = parents.get(outer) if isinstance(outer, ast.Await) else outer
            key = node.args[0] if node.args else None
            if not (is_call_of(outer, "from_memo") and isinstance(key, ast.Name)):
                found.append(f"line {node.lineno}: memo_value() not read by TaskState.from_memo")
            elif key.id == "MEMO_KEY":
                allowed.add(key)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "MEMO_KEY" and node not in allowed:
            found.append(f"line {node.lineno}: MEMO_KEY used outside a TaskState read or write")
    return found


def test_the_memo_is_touched_only_through_task_state() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {violation}"
        for path in modules()
        for violation in violations(path.read_text())
    ]
    assert len(modules()) > 50 and found == []


@pytest.mark.parametrize(
    "source",
    [
        "workflow.upsert_memo({MEMO_KEY: {'v': 1, 'status': status}})",
        "workflow.upsert_memo({'mcp': state.to_memo()})",
        "async def f(h):\n    memo = await h.memo_value(MEMO_KEY, None)\n    return memo['status']",
        "async def f(h):\n    return (await h.memo())['mcp']",
        "client.start_workflow(flow, task, memo={MEMO_KEY: {'taskId': task.task_id}})",
        "key = MEMO_KEY",
    ],
)
def test_the_check_catches_a_memo_built_or_parsed_by_hand(source: str) -> None:
    assert violations(source) != []


# A value other than the default for every field of TaskState: a field added to the model and
# not here fails the first test below, so each new field is checked end to end.
EVERY_FIELD: dict[str, Any] = {
    "task_id": "mcp-task-1",
    "tool": "deploy",
    "owner": "owner-digest",
    "created_at": "2026-12-06T10:00:00.000Z",
    "last_updated_at": "2026-12-06T10:05:00.000Z",
    "ttl_ms": 3_600_000,
    "poll_interval_ms": 2000,
    "status": "input_required",
    "status_message": "Waiting for approval",
    "input_requests": {"approve": {"method": "elicitation/create", "params": {}}},
    "session": "session-digest",
    "call_digest": "call-digest",
    "approvers": {"approve": ["alice", "scope:deployers"]},
    "answered_by": {"earlier": "bob"},
    "steps": [{"name": "build", "status": "succeeded"}],
    "requested_by": "carol",
    "related_task_ids": ["mcp-task-0"],
    "progress": {"progress": 2, "total": 3},
    "paused": True,
}


def test_every_task_state_field_is_set_apart_from_its_default_here() -> None:
    assert set(EVERY_FIELD) == {item.name for item in fields(TaskState)}
    for item in fields(TaskState):
        default = item.default_factory() if item.default_factory is not MISSING else item.default
        assert EVERY_FIELD[item.name] != default, item.name


def test_every_task_state_field_goes_through_the_memo_and_reaches_the_snapshot() -> None:
    state = TaskState(**EVERY_FIELD)
    read = TaskState.from_memo(state.to_memo())
    assert read == state  # to_memo() writes every field and from_memo() reads it back
    snapshot = snapshot_of(state)
    assert isinstance(snapshot, TaskSnapshot)
    for item in fields(TaskState):
        assert getattr(snapshot, item.name) == EVERY_FIELD[item.name], item.name


def test_a_snapshot_copies_the_state_it_comes_from() -> None:
    state = TaskState(**EVERY_FIELD)
    snapshot = snapshot_of(state)
    snapshot.input_requests.clear()
    snapshot.approvers["approve"].append("mallory")
    assert state.input_requests and state.approvers["approve"] == ["alice", "scope:deployers"]
