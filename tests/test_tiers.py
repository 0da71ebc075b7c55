"""The fast tier starts no Temporal (docs/contributing/tests.md): a test that starts a dev
server or a process tree itself, rather than through the fixtures conftest.py marks it by,
carries its tier's marker, on the test or its module."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# What starts a Temporal dev server, or mcp-tasks processes with one, by the module it is
# imported from.
STARTERS = {
    "mcp_server.runtime.devserver": {"TemporalDevServer"},
    "tests.crash_topology": {"Topology", "running"},
    "tests.dev_process": {"DevProcess", "WorkerProcess"},
    "tests.replicas": {"replicas", "Replicas"},
}
TIERS = {"slow", "e2e", "conformance", "clients", "browser", "time_skipping"}
# Fixtures conftest.py marks a test by (TIER_OF_FIXTURE): they start the dev server themselves.
MARKING_FIXTURES = {"temporal", "time_skipping_env"}
# Tests that name a starter without starting anything.
EXEMPT = {
    # builds the dev server's command line, starts nothing
    "tests/runtime/test_supervision.py::test_the_sqlite_setting_is_checked_and_reaches_the_command",
}


def markers(decorators: list[ast.expr]) -> set[str]:
    """The names of the `pytest.mark.X` among `decorators` (or a `pytestmark` value)."""
    found = set()
    for node in decorators:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Attribute):
                if inner.value.attr == "mark":
                    found.add(inner.attr)
    return found


def module_markers(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            return markers([node.value])
    return set()


def starters(tree: ast.Module) -> set[str]:
    """The names under which `tree` imports something that starts processes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in STARTERS:
            for alias in node.names:
                if alias.name in STARTERS[node.module]:
                    names.add(alias.asname or alias.name)
    return names


def starts_processes(function: ast.AST, names: set[str]) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
        for node in ast.walk(function)
    )


def untiered() -> list[str]:
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if "node_modules" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        marked, names = module_markers(tree), starters(tree)
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if not node.name.startswith("test") or not starts_processes(node, names):
                continue
            if {arg.arg for arg in node.args.args} & MARKING_FIXTURES:
                continue
            test = f"{path.relative_to(TESTS.parent)}::{node.name}"
            if not (marked | markers(node.decorator_list)) & TIERS and test not in EXEMPT:
                found.append(test)
    return found


def test_every_test_that_starts_temporal_itself_is_out_of_the_fast_tier() -> None:
    assert untiered() == []


def test_the_check_finds_a_test_that_starts_a_topology_unmarked(tmp_path: Path) -> None:
    tree = ast.parse(
        "from tests.crash_topology import Topology as T\n"
        "def test_x(tmp_path):\n    topology = T(tmp_path)\n"
    )
    test = tree.body[1]
    assert starters(tree) == {"T"}
    assert starts_processes(test, starters(tree))
    assert not markers(test.decorator_list)  # type: ignore[attr-defined]
    marked = ast.parse("@pytest.mark.slow\ndef test_x(tmp_path):\n    Topology(tmp_path)\n")
    assert markers(marked.body[0].decorator_list) == {"slow"}  # type: ignore[attr-defined]
    assert module_markers(ast.parse("pytestmark = [pytest.mark.slow, pytest.mark.e2e]")) == {
        "slow",
        "e2e",
    }
