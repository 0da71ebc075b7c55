"""examples/exposed-python end to end, run as its README says: `mcp-tasks dev` given the
example's tools.toml, and the example's own `worker` script as a process of its own (its venv,
the helper, temporalio; nothing of this server). The team's workflow reports its steps, asks
its approval, and takes the answer from tasks/update, `mcp-tasks tasks answer`, the inbox in a
real browser, and the attached call of a host without tasks; declined it is a tool error,
cancelled it cleans up, and a `kill -9` of its worker while the question waits loses nothing."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_server.protocol.frame.wire import META_TASK_PROGRESS
from mcp_server.runtime.devserver import free_port
from mcp_server.runtime.tokens import add_token
from mcp_tasks.contracts.task_state import MEMO_KEY
from tests.client_2025 import Client2025
from tests.dev_process import MCP_TASKS, DevProcess, alive, reaped
from tests.inbox_stack import CHROMIUM, chromium
from tests.mcp_client import McpClient

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "exposed-python"
TOOL = "migrate_database"
CHILD_TYPE = "MigrateDatabase"
# The first start of the example's worker creates its venv (temporalio from PyPI).
WORKER_START_S = 300
CLI_TIMEOUT_S = 60


def without_pythonpath() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


class ExampleWorker:
    """`examples/exposed-python/worker`, as the README starts it, in a session of its own."""

    def __init__(self, temporal_address: str, log: Path) -> None:
        self.log_path = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [str(EXAMPLE / "worker")],
                # A team's machine: nothing of this repository on its Python path.
                env={**without_pythonpath(), "MCP_TASKS_TEMPORAL_ADDRESS": temporal_address},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    async def wait_ready(self) -> None:
        deadline = time.monotonic() + WORKER_START_S
        while "worker: MigrateDatabase" not in self.log_path.read_text(errors="replace"):
            assert self.process.poll() is None, self.log_path.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the example's worker did not start"
            await asyncio.sleep(0.2)

    def kill(self) -> None:
        """kill -9 of the worker's whole session, as a crashing machine would."""
        if alive(self.process.pid):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@dataclass
class Running:
    dev: DevProcess
    temporal_address: str
    token: str
    base: str
    worker: ExampleWorker
    logs: Path


@pytest.fixture(scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    base = tmp_path_factory.mktemp("exposed-python")
    tokens = base / "tokens.json"
    token = add_token(tokens, "alice", [])
    port, temporal_port = free_port(), free_port()
    env = {
        "MCP_TASKS_EXPOSED_WORKFLOWS_FILE": str(EXAMPLE / "tools.toml"),
        "MCP_TASKS_AUTH": "tokens",
        "MCP_TASKS_TOKENS_FILE": str(tokens),
    }
    dev = DevProcess(base / "data", port, temporal_port, env=env, toolset="demo")
    with reaped([dev]):
        async with httpx.AsyncClient(timeout=30) as http:
            await dev.wait_healthy(http)
        address = f"127.0.0.1:{temporal_port}"
        worker = ExampleWorker(address, base / "worker.log")
        running = Running(dev, address, token, f"http://127.0.0.1:{port}", worker, base)
        try:
            await running.worker.wait_ready()
            yield running
        finally:
            running.worker.kill()


@pytest.fixture
async def mcp(running: Running) -> AsyncIterator[McpClient]:
    async with httpx.AsyncClient(timeout=30) as http:
        client = McpClient(http, f"{running.base}/mcp")
        client.extra_headers = {"Authorization": f"Bearer {running.token}"}
        yield client


@pytest.fixture
async def temporal(running: Running) -> Client:
    return await Client.connect(running.temporal_address)


async def waiting_approval(mcp: McpClient, database: str) -> tuple[str, dict[str, Any]]:
    task_id = await mcp.create_task(TOOL, {"database": database})
    task = await mcp.wait_status(task_id, "input_required", within=60)
    return task_id, task


def approve(value: bool) -> dict[str, Any]:
    return {"approve": {"action": "accept", "content": {"approve": value}}}


async def published_states(temporal: Client, task_id: str) -> list[dict[str, Any]]:
    """Every task state the task workflow published (its memo upserts, in order)."""
    history = await temporal.get_workflow_handle(task_id).fetch_history()
    states = []
    for event in history.events:
        if event.HasField("workflow_properties_modified_event_attributes"):
            memo = event.workflow_properties_modified_event_attributes.upserted_memo
            states.append(json.loads(memo.fields[MEMO_KEY].data))
    return states


async def activities_of(temporal: Client, workflow_id: str) -> list[str]:
    history = await temporal.get_workflow_handle(workflow_id).fetch_history()
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]


async def test_it_reports_its_steps_asks_and_completes_when_tasks_update_approves(
    mcp: McpClient, temporal: Client
) -> None:
    task_id, task = await waiting_approval(mcp, "orders")
    (request,) = task["inputRequests"].values()
    assert request["params"]["message"] == "Switch traffic for orders to the new cluster?"
    assert task["statusMessage"] == "Switch traffic for orders to the new cluster?"
    description = await temporal.get_workflow_handle(task_id).describe()
    assert (await description.memo_value(MEMO_KEY))["progress"] == {"progress": 2, "total": 3}
    # tasks/get (checked against the schemas by the client) and notifications/tasks carry the
    # numbers under this server's own `_meta` key, never as a field of the task.
    assert task["_meta"][META_TASK_PROGRESS] == {"progress": 2, "total": 3}
    assert "progress" not in task
    stream = await mcp.listen(
        {"taskIds": [task_id]}, until=lambda messages: len(messages) >= 2, within=30
    )
    (notified,) = [m["params"] for m in stream if m.get("method") == "notifications/tasks"]
    assert notified["_meta"][META_TASK_PROGRESS] == {"progress": 2, "total": 3}
    assert "error" not in (await mcp.update_task(task_id, approve(True))).body
    done = await mcp.wait_terminal(task_id, within=60)
    assert done["status"] == "completed" and done["result"]["isError"] is False
    expected = {"database": "orders", "rows": 1006, "cluster": "orders-new", "switched": True}
    assert done["result"]["structuredContent"] == expected
    assert done["result"]["content"][0]["text"].startswith("Switched orders to orders-new")
    messages = [state["statusMessage"] for state in await published_states(temporal, task_id)]
    steps = list(dict.fromkeys(m for m in messages if m.startswith("step ")))
    assert [m.split(":")[0] for m in steps] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]


async def test_declined_it_ends_as_a_tool_error_saying_so(mcp: McpClient, temporal: Client) -> None:
    task_id, _ = await waiting_approval(mcp, "billing")
    await mcp.update_task(task_id, {"approve": {"action": "decline"}})
    done = await mcp.wait_terminal(task_id, within=60)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    text = done["result"]["content"][0]["text"]
    assert text.startswith("Not switched: switching billing to the new cluster was declined")
    assert done["result"]["structuredContent"] == {"database": "billing", "switched": False}
    assert await activities_of(temporal, f"{task_id}-{CHILD_TYPE}") == ["copy_rows", "drop_copy"]


async def cli(running: Running, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCP_TASKS_TEMPORAL_ADDRESS": running.temporal_address}
    return await asyncio.to_thread(
        subprocess.run,
        [MCP_TASKS, "tasks", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


async def test_the_operator_cli_shows_its_step_and_answers_it(
    running: Running, mcp: McpClient
) -> None:
    task_id, _ = await waiting_approval(mcp, "users")
    shown = await cli(running, "show", task_id)
    assert shown.returncode == 0, shown.stderr
    assert "  progress:       step 2 of 3\n" in shown.stdout, shown.stdout
    listed = await cli(running, "list", "--tool", TOOL, "--status", "input_required", "--json")
    assert listed.returncode == 0, listed.stderr
    lines = [json.loads(line) for line in listed.stdout.splitlines()]
    (line,) = [line for line in lines if line["taskId"] == task_id]
    assert line["progress"] == {"progress": 2, "total": 3}
    done = await cli(running, "answer", task_id, "--set", "approve=true")
    assert done.returncode == 0, done.stderr
    result = (await mcp.wait_terminal(task_id, within=60))["result"]
    assert result["isError"] is False and result["structuredContent"]["switched"] is True
    assert "approved by operator:" in result["content"][0]["text"]


async def test_cancelled_the_teams_workflow_sees_it_and_drops_its_copy(
    mcp: McpClient, temporal: Client
) -> None:
    task_id, _ = await waiting_approval(mcp, "audit")
    await mcp.cancel_task(task_id)
    assert (await mcp.wait_terminal(task_id, within=60))["status"] == "cancelled"
    child = temporal.get_workflow_handle(f"{task_id}-{CHILD_TYPE}")
    async with asyncio.timeout(30):
        # Polled: Temporal has no event of a child's close to wait on from here.
        while (status := (await child.describe()).status) == WorkflowExecutionStatus.RUNNING:  # noqa: ASYNC110
            await asyncio.sleep(0.2)
    assert status == WorkflowExecutionStatus.CANCELED
    assert await activities_of(temporal, child.id) == ["copy_rows", "drop_copy"]


async def test_a_host_without_tasks_is_asked_in_the_attached_call(mcp: McpClient) -> None:
    first = (
        await mcp.call_tool(TOOL, {"database": "crm"}, capabilities={"elicitation": {}})
    ).result
    assert first["resultType"] == "input_required", first
    ((key, request),) = first["inputRequests"].items()
    assert request["params"]["message"] == "Switch traffic for crm to the new cluster?"
    extra = {
        "inputResponses": {key: approve(True)["approve"]},
        "requestState": first["requestState"],
    }
    done = (
        await mcp.call_tool(
            TOOL, {"database": "crm"}, capabilities={"elicitation": {}}, extra=extra
        )
    ).result
    assert done["resultType"] == "complete" and done["isError"] is False, done
    assert done["structuredContent"]["switched"] is True


async def test_an_attached_call_relays_the_steps_it_reports_as_progress_of_total(
    running: Running,
) -> None:
    async def answer(request: dict[str, Any]) -> dict[str, Any]:
        assert request["method"] == "elicitation/create"
        accepted: dict[str, Any] = approve(True)["approve"]
        return accepted

    headers = {"Authorization": f"Bearer {running.token}"}
    async with httpx.AsyncClient(timeout=60, headers=headers) as http:
        client = Client2025(http, f"{running.base}/mcp", on_request=answer)
        await client.initialize()
        arguments = {"database": "crm-progress"}
        params = {"name": TOOL, "arguments": arguments, "_meta": {"progressToken": "p-1"}}
        reply = await client.request("tools/call", params)
    assert reply.result["structuredContent"]["switched"] is True, reply.body
    progress = [m["params"] for m in reply.messages if m.get("method") == "notifications/progress"]
    assert {p["progressToken"] for p in progress} == {"p-1"}
    # Every notification's progress is larger than the last, as MCP requires.
    assert all(a["progress"] < b["progress"] for a, b in pairwise(progress)), progress
    numbered = [(p["progress"], p["total"], p["message"]) for p in progress if "total" in p]
    # The reported steps go on from the messages counted before them (ProgressRelay): one
    # total, and step 2 of 3 (one step left) while it asks.
    assert len({total for _, total, _ in numbered}) == 1, progress
    assert any(total - n == 1 and "approval" in message for n, total, message in numbered)


async def test_a_host_without_elicitation_answers_with_the_follow_up_tools(mcp: McpClient) -> None:
    reply = await mcp.call_tool(TOOL, {"database": "wiki"}, capabilities={})
    follow_up = reply.result["structuredContent"]
    assert follow_up["status"] == "input_required", follow_up
    assert "task_respond" in follow_up["followUpTools"]
    task_id = follow_up["taskId"]
    answer = {"taskId": task_id, "action": "accept", "content": {"approve": True}}
    await mcp.call_tool("task_respond", answer, capabilities={})
    done = await mcp.wait_terminal(task_id, within=60)
    assert done["result"]["structuredContent"]["switched"] is True


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no {CHROMIUM} (Debian's chromium)")
async def test_the_inbox_approves_it_in_a_real_browser(running: Running, mcp: McpClient) -> None:
    task_id, _ = await waiting_approval(mcp, "search")
    async with chromium() as browser:
        page = await (await browser.new_context()).new_page()
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        await page.goto(f"{running.base}/inbox")
        await page.fill("#token", running.token)
        await page.click("button[type=submit]")
        await page.wait_for_url(f"{running.base}/inbox")
        row = page.locator(f"tr[data-task='{task_id}']")
        await expect(row.locator(".question")).to_have_text(
            "Switch traffic for search to the new cluster?", timeout=20_000
        )
        await row.locator("a").click()
        await page.wait_for_url(f"{running.base}/inbox/tasks/{task_id}")
        # The step the team's workflow reported, in words and as a bar of its total.
        await expect(page.locator("#live .progress span")).to_have_text("step 2 of 3")
        bar = page.locator("#live .progress progress")
        assert (await bar.get_attribute("value"), await bar.get_attribute("max")) == ("2", "3")
        await page.locator("form.answer button[value=approve]").click()
        done = await mcp.wait_terminal(task_id, within=60)
        assert done["result"]["isError"] is False
        assert done["result"]["structuredContent"]["switched"] is True
        await expect(page.locator("#live .pill")).to_have_text("completed", timeout=20_000)
        # Refreshed live as the workflow moved on: its last step.
        await expect(page.locator("#live .progress span")).to_have_text("step 3 of 3")
        # The page keeps to the inbox's Content-Security-Policy (a violation is logged).
        assert not [text for text in console if "Content Security Policy" in text], console


async def test_kill_9_of_the_teams_worker_while_it_waits_loses_nothing(
    running: Running, mcp: McpClient
) -> None:
    task_id, _ = await waiting_approval(mcp, "ledger")
    running.worker.kill()
    # Answered while no team worker runs: the answer waits in Temporal for the next one.
    assert "error" not in (await mcp.update_task(task_id, approve(True))).body
    running.worker = ExampleWorker(running.temporal_address, running.logs / "worker-2.log")
    await running.worker.wait_ready()
    done = await mcp.wait_terminal(task_id, within=90)
    assert done["status"] == "completed" and done["result"]["structuredContent"]["switched"]
