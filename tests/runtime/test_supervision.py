"""The supervised embedded engine of `mcp-tasks dev`: its Temporal is restarted after `kill -9`
while a task waits for an answer, /readyz shows the outage and the recovery, a second `dev` on
the same data dir never harms the first, and SQLite syncs every commit unless told otherwise."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.supervisor import SupervisedWorker
from mcp_tasks.settings import ConfigError, Settings
from tests.dev_process import DevProcess, alive, client_for, cmdline, reaped
from tests.user_workflows import AddNumbers


async def _readyz(http: httpx.AsyncClient, port: int) -> tuple[int, dict[str, Any]]:
    response = await http.get(f"http://127.0.0.1:{port}/readyz")
    return response.status_code, response.json()


async def _ready_body(http: httpx.AsyncClient, port: int, within: float) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        status, body = await _readyz(http, port)
        if status == 200:
            return body
        assert time.monotonic() < deadline, f"not ready again after {within} s: {body}"
        await asyncio.sleep(0.1)


@pytest.mark.slow
async def test_kill_9_of_the_temporal_child_is_survived_and_the_waiting_task_completes(
    tmp_path: Path,
) -> None:
    data_dir, port = tmp_path / "data", free_port()
    dev = DevProcess(data_dir, port, free_port())
    with reaped([dev]):
        async with client_for(port) as mcp:
            await dev.wait_healthy(mcp.http)
            temporal_pid = dev.temporal_pid()
            assert b"synchronous=full" in cmdline(temporal_pid).split(b"\0")  # the default
            asking = await mcp.create_task("confirm_delete", {"filename": "kept.txt"})
            await mcp.wait_status(asking, "input_required", within=10)

            os.kill(temporal_pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while True:  # the outage: not ready, naming Temporal and why it went
                status, body = await _readyz(mcp.http, port)
                if status == 503:
                    break
                assert time.monotonic() < deadline, "/readyz never reported the outage"
                await asyncio.sleep(0.05)
            assert body["missing"] == ["temporal"]
            assert body["temporal"].startswith("unreachable: ")
            assert (await mcp.http.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200

            recovered = await _ready_body(mcp.http, port, within=30)  # by itself
            engine = recovered["engine"]
            assert engine["state"] == "running" and engine["restarts"] == 1
            assert "killed by signal 9" in engine["lastOutage"]["reason"]
            restarted = dev.temporal_pid()
            assert restarted != temporal_pid
            assert b"synchronous=full" in cmdline(restarted).split(b"\0")
            lines = [line for line in dev.log().splitlines() if "supervisor" in line]
            assert len(lines) == 2, lines  # one line for the outage, one for the recovery
            assert "killed by signal 9: restarting it" in lines[0] and "is back" in lines[1]

            waiting = (await mcp.get_task(asking)).result
            assert waiting["status"] == "input_required"
            await mcp.update_task(
                asking, {"confirm": {"action": "accept", "content": {"confirm": True}}}
            )
            done = await mcp.wait_terminal(asking, within=30)
            assert done["result"]["content"][0]["text"] == "Deleted kept.txt"


@pytest.mark.slow
async def test_a_second_dev_on_the_same_data_dir_stops_with_a_message_and_harms_nothing(
    tmp_path: Path,
) -> None:
    data_dir, port, temporal_port = tmp_path / "data", free_port(), free_port()
    first = DevProcess(
        data_dir, port, temporal_port, env={"MCP_TASKS_SQLITE_SYNCHRONOUS": "normal"}
    )
    processes = [first]
    with reaped(processes):
        async with client_for(port) as mcp:
            await first.wait_healthy(mcp.http)
            temporal_pid = first.temporal_pid()
            assert b"synchronous=normal" in cmdline(temporal_pid).split(b"\0")  # the setting

            second = DevProcess(data_dir, free_port(), temporal_port)  # its own HTTP port
            processes.append(second)
            assert second.process.wait(30) == 1
            (message,) = [line for line in second.log().splitlines() if line.strip()]
            assert message == (
                f"mcp-tasks: another `mcp-tasks dev` (pid {first.process.pid}, MCP endpoint "
                f"http://127.0.0.1:{port}/mcp) already runs on {data_dir}: use it, stop it "
                "first, or pass another --data-dir"
            )
            assert first.temporal_pid() == temporal_pid and alive(temporal_pid)
            await first.wait_healthy(mcp.http)
            greeting = await mcp.call_tool("greet", {"name": "Bo"})
            assert greeting.result["content"][0]["text"] == "Hello, Bo!"


@pytest.mark.slow
async def test_a_server_that_runs_but_does_not_answer_is_never_stopped_by_a_joiner(
    tmp_path: Path,
) -> None:
    data_dir, port = tmp_path / "data", free_port()
    dev = DevProcess(data_dir, port, free_port())
    with reaped([dev]):
        async with client_for(port) as mcp:
            await dev.wait_healthy(mcp.http)
            temporal_pid = dev.temporal_pid()
            joiner = TemporalDevServer(data_dir)  # as `stdio --dev` on the same data dir
            os.kill(temporal_pid, signal.SIGSTOP)  # busy: runs, answers nothing
            try:
                with pytest.raises(RuntimeError, match="it is left running"):
                    await joiner.start_or_join(timeout_s=8)
            finally:
                os.kill(temporal_pid, signal.SIGCONT)
                joiner.stop()  # had it started a server of its own
            assert joiner.process is None
            assert alive(temporal_pid) and dev.temporal_pid() == temporal_pid
            await dev.wait_healthy(mcp.http)
            await joiner.start_or_join(timeout_s=30)  # once it answers, it is joined
            assert joiner.joined is not None and joiner.joined.pid == temporal_pid


def test_the_sqlite_setting_is_checked_and_reaches_the_command(tmp_path: Path) -> None:
    assert Settings.from_env({}).sqlite_synchronous == "full"
    normal = Settings.from_env({"MCP_TASKS_SQLITE_SYNCHRONOUS": "normal"})
    command = TemporalDevServer(tmp_path, port=1, synchronous=normal.sqlite_synchronous).command()
    assert "synchronous=normal" in command
    assert "synchronous=full" in TemporalDevServer(tmp_path, port=1).command()
    with pytest.raises(ConfigError, match="MCP_TASKS_SQLITE_SYNCHRONOUS='off': must be one of"):
        Settings.from_env({"MCP_TASKS_SQLITE_SYNCHRONOUS": "off"})


async def test_a_worker_that_fails_is_built_again_and_then_serves(
    temporal: TemporalDevServer, temporal_client: Client
) -> None:
    # A real worker failing for real (its namespace does not exist), then a good one.
    failing = await Client.connect(temporal.address, namespace="no-such-namespace")
    queue = f"supervised-{time.monotonic_ns()}"
    built: list[Worker] = []

    async def build() -> Worker:
        client = failing if not built else temporal_client
        built.append(Worker(client, task_queue=queue, workflows=[AddNumbers]))
        return built[-1]

    supervised = SupervisedWorker(build)
    running = asyncio.create_task(supervised.run())
    try:
        total = await temporal_client.execute_workflow(
            AddNumbers.run,
            args=[2, 3],
            id=queue,
            task_queue=queue,
            execution_timeout=timedelta(seconds=30),
        )
        assert total == 5
        assert len(built) == 2 and supervised.restarts == 1
    finally:
        await supervised.shutdown()
        async with asyncio.timeout(15):
            await running


async def test_a_shutdown_while_the_worker_is_still_connecting_ends_the_run(
    temporal_client: Client,
) -> None:
    # The stop comes while build() still connects: the worker it then returns must not run
    # (it would poll for ever, and its process never exit).
    connected = asyncio.Event()
    built: list[Worker] = []

    async def build() -> Worker:
        await connected.wait()
        built.append(
            Worker(
                temporal_client, task_queue=f"late-{time.monotonic_ns()}", workflows=[AddNumbers]
            )
        )
        return built[-1]

    supervised = SupervisedWorker(build)
    running = asyncio.create_task(supervised.run())
    await asyncio.sleep(0.1)
    await supervised.shutdown()
    connected.set()
    async with asyncio.timeout(15):
        await running
    assert len(built) == 1 and not built[0].is_running
