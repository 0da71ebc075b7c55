"""docs/hosts.md's fastmcp example, run as written (only the URL is the test stack's), in a
process of its own with the fastmcp client `make client-deps` installs."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import Stack

pytestmark = pytest.mark.clients

PAGE = Path(__file__).resolve().parent.parent.parent / "docs" / "hosts.md"


def snippet(section: str) -> str:
    match = re.search(rf"## {section}\n.*?```python\n(.*?)```", PAGE.read_text(), re.S)
    assert match, f"docs/hosts.md has no python block under {section}"
    return match.group(1)


async def test_the_fastmcp_example_lists_echoes_and_gets_an_approval_answered(
    stack: Stack, tmp_path: Path
) -> None:
    code = snippet("fastmcp")
    assert code.count("http://127.0.0.1:8000/mcp") == 1
    script = tmp_path / "example.py"
    script.write_text(code.replace("http://127.0.0.1:8000/mcp", stack.url))
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(60):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert "request_approval" in lines[0] and "task_status" in lines[0]
    assert lines[1:] == [
        "{'text': 'hello', 'length': 5}",
        "asked: Ship 1.2.0?",
        "Decision: approved",
    ]
