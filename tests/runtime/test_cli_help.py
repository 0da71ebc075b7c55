"""`mcp-tasks --help` and every subcommand's: the program's name, and a help text on every
flag and argument (what a newcomer reads before any page)."""

from __future__ import annotations

import argparse
import subprocess

from mcp_server.runtime.cli import _parser
from tests.dev_process import MCP_TASKS


def undocumented(parser: argparse.ArgumentParser, path: str) -> list[str]:
    """Each flag or argument without help text, as `mcp-tasks sub --flag`."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += undocumented(sub, f"{path} {name}")
        elif action.help is None:
            found.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return found


def test_every_flag_and_argument_has_help_text() -> None:
    assert undocumented(_parser(), "mcp-tasks") == []


def test_the_check_above_finds_a_flag_without_help() -> None:
    parser = _parser()
    parser.add_argument("--bare")
    assert undocumented(parser, "mcp-tasks") == ["mcp-tasks --bare"]


def test_help_names_the_command_people_type_and_no_source_file() -> None:
    done = subprocess.run([MCP_TASKS, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: mcp-tasks ")
    assert ".py" not in done.stdout and "`" not in done.stdout
