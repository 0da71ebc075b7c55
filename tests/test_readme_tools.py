"""The README's "Writing your own tools" example, run exactly as the README shows it: its
`my_tools.py` block saved in a fresh working directory, `mcp-tasks dev --tools my_tools` started
there (no PYTHONPATH), and `resize_cluster` followed through its questions to its result."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
import pytest

from mcp_server.runtime.devserver import free_port
from tests.dev_process import POOL, DevProcess, reaped
from tests.mcp_client import McpClient

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_tool_module() -> str:
    """The first ```python block of the README's "Writing your own tools" section."""
    section = README.read_text().split("## Writing your own tools", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the section has no python block"
    code = match.group(1)
    assert code.startswith("# my_tools.py\n"), "the block is no longer my_tools.py"
    return code


def readme_curl_snippet(port: int) -> str:
    """The `mcp` function of "curl, 2026-07-28" and the section's bash block, on `port`."""
    text = README.read_text()
    curl = text.split("### curl, 2026-07-28", 1)[1]
    function = re.search(r"^mcp\(\) \{.*?echo; \}$", curl, re.S | re.M)
    section = text.split("## Writing your own tools", 1)[1].split("\n### ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert function and block
    return f"{function.group(0)}\n{block.group(1)}".replace("127.0.0.1:8000", f"127.0.0.1:{port}")


def test_the_readme_names_the_command_the_test_runs() -> None:
    section = README.read_text().split("## Writing your own tools", 1)[1].split("\n## ", 1)[0]
    assert "--tools my_tools" in section


@pytest.mark.slow
async def test_the_readme_tool_runs_as_written_from_a_fresh_directory(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "my_tools.py").write_text(readme_tool_module())
    # As a user runs it: nothing on PYTHONPATH, my_tools found in the working directory.
    dev = DevProcess(
        tmp_path / "data", free_port(), free_port(), toolset="demo",
        extra_args=("--tools", "my_tools"), cwd=work, env={"PYTHONPATH": ""},
    )  # fmt: skip
    with reaped([dev]):
        async with httpx.AsyncClient(timeout=15, limits=POOL) as http:
            await dev.wait_healthy(http, within=120)
            mcp = McpClient(http, dev.url)
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
            done = await mcp.wait_terminal(task_id, within=60)
            # The README's curl walkthrough of the same tool, run by bash as written.
            shell = await asyncio.create_subprocess_exec(
                "bash", "-c", readme_curl_snippet(dev.port), stdout=asyncio.subprocess.PIPE
            )
            async with asyncio.timeout(60):
                printed = (await shell.communicate())[0].decode()
    assert done["status"] == "completed", dev.log()
    assert done["result"]["structuredContent"] == {"size": 3, "region": "staging"}
    assert done["result"]["content"][0]["text"] == "Resized staging to 3"
    assert shell.returncode == 0, printed
    lines = printed.strip().splitlines()
    assert '"resultType":"input_required"' in lines[0] and "requestState" in lines[0]
    assert '"status":"completed"' in lines[-1] and "Resized staging to 3" in lines[-1]
