"""`mcp-tasks dev` as users run it: process trees, kill -9, restarts on the same data dir."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from mcp_server.runtime.devserver import free_port
from tests.dev_process import DevProcess, client_for, descendants, reaped, wait_gone

pytestmark = pytest.mark.slow


async def test_a_task_survives_kill_9_of_the_whole_dev_tree_and_completes_after_restart(
    tmp_path: Path,
) -> None:
    data_dir, port, temporal_port = tmp_path / "data", free_port(), free_port()
    first = DevProcess(data_dir, port, temporal_port)
    processes = [first]
    with reaped(processes):
        async with client_for(port) as mcp:
            await first.wait_healthy(mcp.http)
            asking = await mcp.create_task("confirm_delete", {"filename": "survivor.txt"})
            sleeping = await mcp.create_task("slow_compute", {"seconds": 4, "label": "survivor"})
            await mcp.wait_status(asking, "input_required", within=5)
            tree = first.tree()
            assert len(tree) >= 2, "expected mcp-tasks dev and its temporal server"
            for pid in tree:
                os.kill(pid, signal.SIGKILL)
            wait_gone(tree)

            second = DevProcess(data_dir, port, temporal_port)
            processes.append(second)
            await second.wait_healthy(mcp.http)
            again = (await mcp.get_task(asking)).result
            assert again["taskId"] == asking and again["status"] == "input_required"
            await mcp.update_task(
                asking, {"confirm": {"action": "accept", "content": {"confirm": True}}}
            )
            done = await mcp.wait_terminal(asking, within=20)
            assert done["result"]["content"][0]["text"] == "Deleted survivor.txt"
            finished = await mcp.wait_terminal(sleeping, within=20)
            assert finished["status"] == "completed"

            second.process.send_signal(signal.SIGTERM)
            tree = second.tree()
            assert second.process.wait(30) == 0
            wait_gone(tree)


async def test_killing_only_the_dev_process_leaves_no_orphaned_temporal(tmp_path: Path) -> None:
    port = free_port()
    dev = DevProcess(tmp_path / "data", port, free_port())
    with reaped([dev]):
        async with client_for(port) as mcp:
            await dev.wait_healthy(mcp.http)
        children = descendants(dev.process.pid)
        assert children, "expected a temporal child process"
        dev.process.kill()
        dev.process.wait()
        wait_gone(children)
