"""The documentation's runnable examples, run exactly as written.

A code block marked `<!-- runnable -->` on the line before it is run by this file:
- Getting started's curl walkthrough of a deploy and its approval;
- Writing your own tools: its `my_tools.py` block saved in a fresh working directory,
  `mcp-tasks dev --tools my_tools` started there (no PYTHONPATH), `resize_cluster` followed through
  its questions to its result, and the page's curl walkthrough of the same tool.
One `mcp-tasks dev` serves both; the blocks' `127.0.0.1:8000` is this test's port.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_server.runtime.devserver import free_port
from tests.dev_process import POOL, DevProcess, reaped
from tests.mcp_client import McpClient

ROOT = Path(__file__).resolve().parents[2]
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
WRITING_TOOLS = ROOT / "docs" / "guides" / "writing-tools.md"
RUNNABLE = re.compile(r"<!-- runnable -->\n```bash\n(.*?)```", re.S)


def runnable_blocks(page: Path) -> list[str]:
    return RUNNABLE.findall(page.read_text())


def tool_module() -> str:
    """Writing your own tools' first python block: my_tools.py."""
    match = re.search(r"```python\n(.*?)```", WRITING_TOOLS.read_text(), re.S)
    assert match, "the page has no python block"
    code = match.group(1)
    assert code.startswith("# my_tools.py\n"), "the block is no longer my_tools.py"
    return code


def curl_function() -> str:
    """The `mcp` function of Getting started's walkthrough (the other blocks use it)."""
    function = re.search(r"^mcp\(\) \{.*?echo; \}$", GETTING_STARTED.read_text(), re.S | re.M)
    assert function, "Getting started no longer defines mcp()"
    return function.group(0)


def on_port(script: str, port: int) -> str:
    return script.replace("127.0.0.1:8000", f"127.0.0.1:{port}")


async def run_bash(script: str) -> tuple[int, list[str]]:
    shell = await asyncio.create_subprocess_exec(
        "bash", "-c", script, stdout=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(90):
        printed = (await shell.communicate())[0].decode()
    return shell.returncode or 0, printed.strip().splitlines()


def test_each_page_marks_the_blocks_this_file_runs() -> None:
    assert len(runnable_blocks(GETTING_STARTED)) == 1
    assert len(runnable_blocks(WRITING_TOOLS)) == 1
    assert "--tools my_tools" in WRITING_TOOLS.read_text()


@pytest.mark.slow
async def test_the_documented_examples_run_as_written_from_a_fresh_directory(
    tmp_path: Path,
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "my_tools.py").write_text(tool_module())
    # As a user runs it: nothing on PYTHONPATH, my_tools found in the working directory; the
    # demo's pipelines where `make run` finds them (the repository root).
    env = {"PYTHONPATH": "", "MCP_TASKS_PIPELINES_DIR": str(ROOT / "pipelines")}
    dev = DevProcess(
        tmp_path / "data",
        free_port(),
        free_port(),
        toolset="demo",
        extra_args=("--tools", "my_tools"),
        cwd=work,
        env=env,
    )
    with reaped([dev]):
        async with httpx.AsyncClient(timeout=15, limits=POOL) as http:
            await dev.wait_healthy(http, within=120)
            done = await _resize_cluster(McpClient(http, dev.url))
            tool_code, tool_lines = await run_bash(
                on_port(f"{curl_function()}\n{runnable_blocks(WRITING_TOOLS)[0]}", dev.port)
            )
            deploy_code, deploy_lines = await run_bash(
                on_port(runnable_blocks(GETTING_STARTED)[0], dev.port)
            )
    assert done["status"] == "completed", dev.log()
    assert done["result"]["structuredContent"] == {"size": 3, "region": "staging"}
    assert done["result"]["content"][0]["text"] == "Resized staging to 3"
    assert tool_code == 0, tool_lines
    assert '"resultType":"input_required"' in tool_lines[0] and "requestState" in tool_lines[0]
    assert '"status":"completed"' in tool_lines[-1] and "Resized staging to 3" in tool_lines[-1]
    assert deploy_code == 0, deploy_lines
    assert not [line for line in deploy_lines if '"error"' in line], deploy_lines
    assert '"status":"input_required"' in deploy_lines[2], deploy_lines
    assert '"status":"completed"' in deploy_lines[4], deploy_lines


async def _resize_cluster(mcp: McpClient) -> dict[str, Any]:
    """The example tool through a Python client: its MRTR round, then its task's question."""
    first = (await mcp.call_tool("resize_cluster", {"size": 3})).result
    assert first["resultType"] == "input_required", first
    region = {"region": {"action": "accept", "content": {"region": "staging"}}}
    extra = {"inputResponses": region, "requestState": first["requestState"]}
    created = (await mcp.call_tool("resize_cluster", {"size": 3}, extra=extra)).result
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    waiting = await mcp.wait_status(task_id, "input_required", within=60)
    assert "Resize staging to 3 nodes?" in str(waiting["inputRequests"]["ok"])
    answer = {"ok": {"action": "accept", "content": {"ok": True}}}
    assert (await mcp.update_task(task_id, answer)).status == 200
    return await mcp.wait_terminal(task_id, within=60)
