"""The layout page (docs/contributing/layout.md) and the generated modules page hold to the code:
the layers it describes are the contracts `make lint` checks, in their order, and every module
and folder is on a page."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = ROOT / "docs" / "contributing" / "layout.md"


def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def first_cells(section: str) -> list[str]:
    """The first cell of each row of the table under the heading `section` of the layout page."""
    text = LAYOUT.read_text().split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    return [re.split(r"(?<!\\)\|", row)[1].strip() for row in rows[1:]]


def test_every_module_of_the_shipped_packages_is_on_the_modules_page() -> None:
    page = hooks().modules_page()
    for package in ("mcp_server", "workflows", "activities", "mcp_tasks"):
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                assert f"| `{path.relative_to(ROOT)}` |" in page, path


def test_the_layout_page_lists_the_servers_layers_in_the_order_the_contract_checks() -> None:
    contract = dict(hooks().layers())["mcp_server"]
    described = [
        cell.replace("\\|", "|").replace("`", "") for cell in first_cells("The server's layers")
    ]
    assert described == contract


def test_the_layout_page_lists_the_four_packages_in_their_layer_order() -> None:
    packages = [package for package, _ in hooks().layers()]
    assert [cell.strip("`/") for cell in first_cells("The four packages")] == packages


def test_the_layout_page_names_every_part_of_the_shared_bottom() -> None:
    parts = {p.stem for p in (ROOT / "mcp_tasks").glob("*.py") if p.name != "__init__.py"}
    parts |= {p.name for p in (ROOT / "mcp_tasks").iterdir() if (p / "__init__.py").exists()}
    named = {
        cell.strip("`/").removesuffix(".py")
        for cell in first_cells("The shared bottom: `mcp_tasks/`")
    }
    assert named == parts


def test_the_layout_page_names_every_folder_beside_the_packages() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    folders = {path.split("/", 1)[0] for path in tracked if "/" in path}
    folders -= {package for package, _ in hooks().layers()}
    named = {
        name.strip("`/ ") for cell in first_cells("Beside the packages") for name in cell.split(",")
    }
    assert folders == named


def test_the_layout_page_lists_the_protocols_floors_in_the_order_the_contract_checks() -> None:
    floors, _ = tables_first_cells("Inside `protocol/`")
    assert [cell.replace("\\|", "|").replace("`", "") for cell in floors] == protocol_layers()


def test_the_layout_page_describes_each_era_sibling_and_places_every_protocol_folder() -> None:
    _, siblings = tables_first_cells("Inside `protocol/`")
    (floor,) = [layer for layer in protocol_layers() if "v2025" in layer]
    assert [cell.strip("`/") for cell in siblings] == floor.split(" | ")
    folders = {p.name for p in (ROOT / "mcp_server/protocol").iterdir() if p.is_dir()}
    placed = {name for layer in protocol_layers() for name in layer.split(" | ")}
    assert folders - {"__pycache__"} <= placed


def tables_first_cells(section: str) -> list[list[str]]:
    """The first cells of each table under the heading `section`, header rows left out."""
    text = LAYOUT.read_text().split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    found: list[list[str]] = []
    rows: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            body = [row for row in rows[1:] if "---" not in row]
            found.append([re.split(r"(?<!\\)\|", row)[1].strip() for row in body])
            rows = []
    return found


def protocol_layers() -> list[str]:
    """The layers of the protocol's contract in pyproject.toml, top first."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [
        contract["layers"]
        for contract in config["contracts"]
        if contract.get("containers") == ["mcp_server.protocol"]
    ]
    return list(layers)


TESTS_PAGE = ROOT / "docs" / "contributing" / "tests.md"
# The test modules that span the whole house, left at the root of tests/.
MAX_ROOT_TEST_MODULES = 20


def test_every_folder_of_tests_is_in_the_tests_page_table_and_the_root_keeps_few_modules() -> None:
    text = TESTS_PAGE.read_text().split("## Where a test lives\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`tests/([a-z_0-9]+)/`", text))
    folders = {
        path.parent.name
        for path in (ROOT / "tests").glob("*/test_*.py")
        if path.parent.name != "__pycache__"
    }
    assert folders <= named, sorted(folders - named)
    assert not named - folders, sorted(named - folders)  # no folder the page invents
    at_root = sorted(path.name for path in (ROOT / "tests").glob("test_*.py"))
    assert len(at_root) <= MAX_ROOT_TEST_MODULES, at_root
