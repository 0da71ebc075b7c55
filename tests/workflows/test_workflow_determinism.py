"""The determinism guard of the workflow package that the worker passes through its sandbox
(mcp_server/runtime/worker.py PASSED_THROUGH).

A module passed through is imported once, outside the sandbox: the sandbox no longer stops a
call to the clock, to randomness or to I/O in it. So this static check stands in for it, over
every module of `workflows/`: only the imports below, no call that reads the wall clock, and no
module-level mutable state a workflow could share with another. Replaying the recorded
histories (test_task_state.py) then proves that what the code does is deterministic.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcp_server.runtime.worker import PASSED_THROUGH

ROOT = Path(__file__).parents[2]
# Deterministic by construction (or Temporal's own, which makes them so in a workflow).
ALLOWED_IMPORTS = {
    "__future__",
    "asyncio",  # Temporal's event loop: sleeps are durable timers
    "collections",
    "collections.abc",
    "dataclasses",
    "datetime",  # types and arithmetic; the wall clock is refused below
    "hashlib",  # pure functions of their input (approver ids)
    "json",
    # Validation and JSON Schema of data: pure functions of their input (the interactive
    # contract's payloads, mcp_tasks/contracts/interactive.py).
    "pydantic",
    "pydantic.alias_generators",
    "pydantic.json_schema",
    "pydantic_core",
    "re",
    "typing",
    "temporalio",
    "temporalio.common",
    "temporalio.exceptions",
    "temporalio.workflow",
    "temporalio.worker",  # interceptor base classes (secret_interceptor.py)
    "temporalio.activity",  # the activity side of that interceptor, which runs outside
}
# Imported only for their types and names, inside `workflow.unsafe.imports_passed_through()`.
ACTIVITY_PACKAGE = "activities"
CLOCK_CALLS = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}
FORBIDDEN_BUILTINS = {"open", "input", "print", "exec", "eval", "__import__"}


def modules() -> list[Path]:
    folders = (ROOT / package.replace(".", "/") for package in PASSED_THROUGH)
    return sorted(path for folder in folders for path in folder.rglob("*.py"))


def passed_through(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in (*PASSED_THROUGH, ACTIVITY_PACKAGE))


def imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def violations(source: str) -> list[str]:
    tree = ast.parse(source)
    found: list[str] = []
    for node in ast.walk(tree):
        for name in imported(node):
            if name not in ALLOWED_IMPORTS and not passed_through(name):
                found.append(f"line {getattr(node, 'lineno', 0)}: imports {name}")
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in CLOCK_CALLS:
                owner = func.value
                if not (isinstance(owner, ast.Name) and owner.id == "workflow"):
                    found.append(f"line {node.lineno}: calls .{func.attr}() (use workflow.now())")
            if isinstance(func, ast.Name) and func.id in FORBIDDEN_BUILTINS:
                found.append(f"line {node.lineno}: calls {func.id}()")
    for statement in tree.body:  # module level: constants only, never a mutable container
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            if isinstance(statement.value, ast.List | ast.Dict | ast.Set):
                targets = statement.targets if isinstance(statement, ast.Assign) else []
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                if names and not all(n.isupper() for n in names):
                    found.append(f"line {statement.lineno}: module-level mutable {names}")
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_passed_through_workflow_module_does_nothing_non_deterministic(path: Path) -> None:
    assert violations(path.read_text()) == []


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("import time\n", "imports time"),
        ("import random\n", "imports random"),
        ("from uuid import uuid4\n", "imports uuid"),
        ("from datetime import datetime\nx = datetime.now()\n", "calls .now()"),
        ("def f():\n    return open('x')\n", "calls open()"),
        ("cache = {}\n", "module-level mutable"),
    ],
)
def test_the_guard_refuses_what_the_sandbox_would_have_stopped(source: str, what: str) -> None:
    assert any(what in line for line in violations(source))


def test_the_guard_lets_workflow_now_and_constants_through() -> None:
    source = "from temporalio import workflow\nDECISIONS = {'a': 'b'}\nx = workflow.now()\n"
    assert violations(source) == []
