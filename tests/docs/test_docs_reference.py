"""The reference pages of the documentation site are generated from the code (docs/hooks.py);
these tests hold the generator to it: a setting, an environment variable, an error code or a
command missing from its page fails here."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from types import ModuleType

from mcp_server.protocol.frame import errors
from mcp_server.runtime.cli import _parser
from mcp_tasks.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cells(page: str, key: str) -> list[str]:
    """The cells of the table row of `page` that names `key` ([] when there is none)."""
    row = next((line for line in page.splitlines() if line.startswith(f"| {key} ")), "")
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]


def test_a_row_without_a_description_has_an_empty_last_cell() -> None:
    row = "| `A` | `str \\| None` | `None` |  |"
    assert cells(row, "`A`") == ["`A`", "`str \\| None`", "`None`", ""]


def test_every_setting_is_on_the_settings_page_with_what_it_is() -> None:
    page = hooks().settings_page()
    for name in Settings.model_fields:
        row = cells(page, f"`MCP_TASKS_{name.upper()}`")
        assert row, f"MCP_TASKS_{name.upper()} is missing from the settings page"
        assert row[-1], f"MCP_TASKS_{name.upper()} has no description"


def test_variables_read_outside_settings_are_on_the_settings_page() -> None:
    module = hooks()
    read = module.variables_read_directly()
    assert "MCP_TASKS_LOG_LEVEL" in read
    page = module.settings_page()
    for variable in read:
        assert f"`{variable}`" in page


def test_every_error_code_is_on_the_errors_page_with_when_it_is_sent() -> None:
    page = hooks().errors_page()
    constants = {
        name: value
        for name, value in vars(errors).items()
        if name.isupper()
        and not name.startswith("_")
        and isinstance(value, int)
        and -32768 <= value <= -31000
    }
    assert {"INVALID_PARAMS", "RATE_LIMITED", "APPROVERS_NOT_ALLOWED"} <= set(constants)
    for name, value in constants.items():
        row = cells(page, f"`{name}`")
        assert row and row[1].startswith(f"`{value}`"), f"{name} ({value}) is not on the page"
        assert row[-1], f"{name} has no description"


def _commands(parser: argparse.ArgumentParser, path: str) -> list[str]:
    found = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, f"{path} {name}")
    return found


def test_every_command_is_on_the_command_line_page() -> None:
    page = hooks().cli_page()
    commands = _commands(_parser(), "mcp-tasks")
    assert "mcp-tasks tasks answer" in commands and "mcp-tasks token revoke" in commands
    for command in commands:
        assert f"## `{command}`" in page, f"{command} is missing from the command line page"
