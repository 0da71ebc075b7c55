"""The exposing-workflows guide's snippets are the example its end-to-end test runs
(tests/sdk/test_exposed_python_example.py): the Python block is
examples/exposed-python/workflows.py, the TypeScript block
examples/exposed-typescript/src/workflows.ts (run by tests/sdk/test_exposed_typescript.py), the TOML
block its tools.toml, the shell block the README's first command, which starts the two processes
that test starts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "exposing-workflows.md"
CONTRACT = ROOT / "docs" / "reference" / "interactive-contract.md"
EXAMPLE = ROOT / "examples" / "exposed-python"
TS_EXAMPLE = ROOT / "examples" / "exposed-typescript"


def blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), re.S)


def test_the_guides_python_is_the_examples_workflow() -> None:
    (python,) = blocks(GUIDE, "python")
    assert python == (EXAMPLE / "workflows.py").read_text()


def test_the_guides_typescript_is_the_typescript_examples_workflow() -> None:
    (typescript,) = blocks(GUIDE, "ts")
    assert typescript == (TS_EXAMPLE / "src" / "workflows.ts").read_text()


def test_the_guides_first_toml_is_the_examples_tools_file() -> None:
    assert blocks(GUIDE, "toml")[0] == (EXAMPLE / "tools.toml").read_text()


def test_the_guides_command_is_the_readmes_first_and_starts_what_the_test_starts() -> None:
    (command,) = blocks(GUIDE, "bash")
    assert command == blocks(EXAMPLE / "README.md", "bash")[0]
    server, worker = (shlex.split(part) for part in command.strip().split(" & "))
    assert server == [
        "MCP_TASKS_EXPOSED_WORKFLOWS_FILE=examples/exposed-python/tools.toml",
        ".venv/bin/mcp-tasks",
        "dev",
    ]
    assert worker == ["examples/exposed-python/worker"]
    assert (ROOT / worker[0]).stat().st_mode & 0o111


def test_the_contract_page_names_the_schema_and_marks_what_is_not_run_here() -> None:
    page = CONTRACT.read_text()
    assert "mcp_tasks/contracts/interactive.schema.json" in page
    assert ".ci/interactive_schema.py --write" in page
    for language in ("go", "java"):
        assert blocks(CONTRACT, language), f"no {language} example"
    assert page.lower().count("not run here (no go or maven registry on these machines)") == 2
