"""SIGTERM, as an orchestrator stops a process: `mcp-tasks server` finishes the requests in
flight (and closes long-lived streams after a bounded grace) and exits 0; `mcp-tasks worker`
finishes or hands back its activities and exits 0, and the task completes on another worker
without rerunning a completed step."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from mcp_server.runtime.devserver import TemporalDevServer
from tests.mcp_client import NO_CAPABILITIES, McpClient
from tests.replicas import Replicas, replicas
from tests.workflows.test_deploy import journal, pipeline

pytestmark = pytest.mark.slow


async def exit_code(process: subprocess.Popen[bytes], within: float) -> int | None:
    """The process's exit code once it ends, or None if it still runs after `within` s."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(process.wait), within)
    except TimeoutError:
        return None


async def started_on(client: Client, running: Replicas) -> str:
    """The id of the first workflow started on the replicas' task queue."""
    for _ in range(300):
        async for execution in client.list_workflows(f"TaskQueue = '{running.task_queue}'"):
            return execution.id
        await asyncio.sleep(0.1)
    raise AssertionError("no workflow started")


async def test_sigterm_to_the_server_lets_a_slow_request_finish_and_exits_0(
    temporal: TemporalDevServer, temporal_client: Client, tmp_path: Path
) -> None:
    with replicas(temporal.address, tmp_path) as running:
        running.start("worker")
        server, port = running.server()
        async with httpx.AsyncClient(timeout=60) as http:
            await running.ready(http, port)
            mcp = McpClient(http, f"http://127.0.0.1:{port}/mcp")
            # Without the tasks extension the call runs attached: it answers when the job ends.
            arguments = {"name": "drain", "steps": 1, "step_seconds": 4}
            call = asyncio.create_task(
                mcp.call_tool("multi_step_job", arguments, capabilities=NO_CAPABILITIES)
            )
            await started_on(temporal_client, running)
            server.send_signal(signal.SIGTERM)
            reply = await call
            assert reply.status == 200
            assert reply.result["structuredContent"]["name"] == "drain"
            assert len(reply.result["structuredContent"]["steps"]) == 1
            assert await exit_code(server, within=30) == 0
            # It took no new connection once told to stop.
            with pytest.raises(httpx.TransportError):
                await http.get(f"http://127.0.0.1:{port}/healthz")


async def test_sigterm_to_the_server_closes_listen_streams_within_its_grace(
    temporal: TemporalDevServer, tmp_path: Path
) -> None:
    # A listen stream lasts up to an hour; shutdown must not wait for it.
    with replicas(temporal.address, tmp_path, http_shutdown_grace_s="2") as running:
        running.start("worker")
        server, port = running.server()
        async with httpx.AsyncClient(timeout=60) as http:
            await running.ready(http, port)
            mcp = McpClient(http, f"http://127.0.0.1:{port}/mcp")
            task_id = await mcp.create_task("request_approval", {"message": "Ship it?"})
            await mcp.wait_status(task_id, "input_required", within=30)
            acked = asyncio.Event()

            async def on_ack() -> None:
                acked.set()

            listening = asyncio.create_task(
                mcp.listen({"taskIds": [task_id]}, within=120, on_ack=on_ack)
            )
            await asyncio.wait_for(acked.wait(), 30)
            server.send_signal(signal.SIGTERM)
            assert await exit_code(server, within=30) == 0
            with pytest.raises(httpx.TransportError):
                await listening  # the stream was closed; the client listens again elsewhere


@pytest.mark.timeout(180)  # 25-55 s measured alone: too close to the default 90 s under load
async def test_sigterm_to_a_worker_mid_step_exits_0_and_the_task_completes_on_another(
    temporal: TemporalDevServer, pipelines_dir: Path, tmp_path: Path
) -> None:
    # "b" runs longer than the worker's graceful shutdown timeout: it is cancelled, handed
    # back and retried on the next worker; "a" never runs again.
    name, log = pipeline(
        pipelines_dir,
        """
[[steps]]
name = "a"
run = "echo a >> JOURNAL"
[[steps]]
name = "b"
run = "echo b >> JOURNAL; sleep 20; echo b-done >> JOURNAL"
[[steps]]
name = "c"
run = "echo c >> JOURNAL"
""",
    )
    # A grace (MCP_TASKS_WORKER_SHUTDOWN_GRACE_S) shorter than "b", to cut it.
    settings = {
        "pipelines_dir": str(pipelines_dir),
        "max_open_tasks_per_principal": "0",
        "worker_shutdown_grace_s": "5",
    }
    with replicas(temporal.address, tmp_path, **settings) as running:
        worker = running.start("worker")
        _, port = running.server()
        async with httpx.AsyncClient(timeout=60) as http:
            await running.ready(http, port)
            mcp = McpClient(http, f"http://127.0.0.1:{port}/mcp")
            task_id = await mcp.create_task("deploy", {"pipeline": name})
            await mcp.wait_for(task_id, lambda t: journal(log) == ["a", "b"], within=30)
            worker.send_signal(signal.SIGTERM)
            assert await exit_code(worker, within=60) == 0
            running.start("worker")
            done = await mcp.wait_terminal(task_id, within=90)
            assert done["status"] == "completed" and done["result"]["isError"] is False, done
            # "b" ran once per attempt: twice, or more if a loaded machine kept an attempt
            # from heartbeating within its 5 s (Temporal then retries it, as it should).
            steps = done["result"]["structuredContent"]["steps"]
            attempts = [step["attempt"] for step in steps]
            assert attempts[0] == 1 and attempts[1] >= 2 and attempts[2] == 1, attempts
            assert journal(log) == ["a", *["b"] * attempts[1], "b-done", "c"], attempts


@pytest.mark.timeout(180)
async def test_sigterm_to_a_worker_lets_a_step_shorter_than_its_grace_finish(
    temporal: TemporalDevServer, pipelines_dir: Path, tmp_path: Path
) -> None:
    """A rollout does not cut a step that ends within MCP_TASKS_WORKER_SHUTDOWN_GRACE_S: the
    stopping worker finishes it (once, attempt 1) and the next worker runs the rest. Real
    processes: the grace is the SDK worker's own shutdown on a real SIGTERM."""
    name, log = pipeline(
        pipelines_dir,
        """
[[steps]]
name = "a"
run = "echo a >> JOURNAL"
[[steps]]
name = "b"
run = "echo b >> JOURNAL; sleep 8; echo b-done >> JOURNAL"
[[steps]]
name = "c"
run = "echo c >> JOURNAL"
""",
    )
    # The default grace (60 s): "b" lasts longer than the 5 s the worker used to give.
    settings = {"pipelines_dir": str(pipelines_dir), "max_open_tasks_per_principal": "0"}
    with replicas(temporal.address, tmp_path, **settings) as running:
        worker = running.start("worker")
        _, port = running.server()
        async with httpx.AsyncClient(timeout=60) as http:
            await running.ready(http, port)
            mcp = McpClient(http, f"http://127.0.0.1:{port}/mcp")
            task_id = await mcp.create_task("deploy", {"pipeline": name})
            await mcp.wait_for(task_id, lambda t: journal(log) == ["a", "b"], within=30)
            worker.send_signal(signal.SIGTERM)
            assert await exit_code(worker, within=90) == 0
            assert journal(log) == ["a", "b", "b-done"]  # finished by the stopping worker
            running.start("worker")
            done = await mcp.wait_terminal(task_id, within=90)
            assert done["status"] == "completed" and done["result"]["isError"] is False, done
            steps = done["result"]["structuredContent"]["steps"]
            assert [step["attempt"] for step in steps] == [1, 1, 1]
            assert journal(log) == ["a", "b", "b-done", "c"]
