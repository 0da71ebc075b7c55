"""examples/exposed-typescript run as its README says: `mcp-tasks dev` with the example's
tools.toml, and the example's `worker` script (a real @temporalio/worker in its own Node
process) beside it. Through the TypeScript helper, ShipRelease reports its steps, asks its
approval, and completes, ends as a tool error, or rolls back on cancellation; a `kill -9` of
its worker while the question waits loses nothing; paused, it holds at its safe point, and its
steering messages reach it in order.

A process tree (`slow`): what is tested is a team's worker in a process of its own, killed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_server.inbox.forms import FIELD_PREFIX
from mcp_server.runtime.devserver import free_port
from mcp_server.tools.exposed import load
from mcp_tasks.contracts.task_state import MEMO_KEY
from mcp_tasks.settings import ConfigError
from tests.dev_process import MCP_TASKS, DevProcess, alive, client_for, reaped
from tests.inbox_stack import CHROMIUM, chromium
from tests.interactive_page import SCHEMA_FILE
from tests.mcp_client import TASKS, TASKS_AND_ELICITATION, McpClient

REPO = Path(__file__).parents[2]
EXAMPLE = REPO / "examples" / "exposed-typescript"
# A first start runs `npm ci` in sdk/typescript and in the example (about a minute here).
FIRST_START_S = 600
SHIP = {"service": "shop", "version": "v2"}
# This server's steering extension (docs/guides/steering.md): its methods and capability.
STEER, PAUSE, RESUME = (f"mcp-tasks-temporal/{verb}" for verb in ("steer", "pause", "resume"))
STEERING: dict[str, Any] = {
    **TASKS_AND_ELICITATION,
    "extensions": {**TASKS["extensions"], "mcp-tasks-temporal/steering": {}},
}


def steering_unknown() -> bool:
    """Whether this checkout's server lacks the opt-in keys the example's tools.toml uses
    (any other problem with the file is no reason to skip: it fails the tests)."""
    try:
        load(EXAMPLE / "tools.toml")
    except ConfigError as err:
        return "steering" in str(err) and "is not a known key" in str(err)
    return False


APPROVAL = "Switch all traffic of shop to v2 (image registry.example/shop:v2)?"

pytestmark = [
    pytest.mark.slow,
    # Longer than the default: the module's first test may install the example from npm.
    pytest.mark.timeout(FIRST_START_S + 120),
    pytest.mark.skipif(shutil.which("node") is None, reason="no node on PATH"),
    # The task side of the contract (the parent relaying reports and questions) ships with its
    # JSON Schema: without it, no question would ever reach a client.
    pytest.mark.skipif(
        not SCHEMA_FILE.exists(),
        reason="this checkout has no server side of the interactive contract "
        "(mcp_tasks/contracts/interactive.schema.json)",
    ),
    pytest.mark.skipif(
        steering_unknown(),
        reason="this checkout's server has no steering (the tools.toml keys steering, pausable)",
    ),
]


class TsWorker:
    """`examples/exposed-typescript/worker`, as the README runs it, in a session of its own."""

    def __init__(self, temporal_address: str, log_path: Path) -> None:
        self.log_path = log_path
        env = {
            **os.environ,
            "MCP_TASKS_TEMPORAL_ADDRESS": temporal_address,
            "SHIP_RELEASE_STEP_MS": "800",
        }
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(EXAMPLE / "worker")],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, within: float) -> None:
        deadline = time.monotonic() + within
        while "worker ready" not in self.log():
            assert self.process.poll() is None, f"the worker exited:\n{self.log()[-3000:]}"
            assert time.monotonic() < deadline, f"the worker is not ready:\n{self.log()[-3000:]}"
            time.sleep(0.2)

    def kill(self) -> None:
        """kill -9 of the worker's whole session, as a crashing machine would."""
        if alive(self.process.pid):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Running:
    dev: DevProcess
    temporal_address: str
    base: Path
    worker: TsWorker

    def restart_worker(self) -> None:
        self.worker = TsWorker(self.temporal_address, self.base / f"worker-{time.time_ns()}.log")
        self.worker.wait_ready(FIRST_START_S)


@pytest.fixture(scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    base = tmp_path_factory.mktemp("exposed-typescript")
    port, temporal_port = free_port(), free_port()
    # The README's first command, from the repository root.
    env = {"MCP_TASKS_EXPOSED_WORKFLOWS_FILE": "examples/exposed-typescript/tools.toml"}
    dev = DevProcess(base / "data", port, temporal_port, env=env, toolset="demo", cwd=REPO)
    address = f"127.0.0.1:{temporal_port}"
    with reaped([dev]):
        async with httpx.AsyncClient(timeout=15) as http:
            await dev.wait_healthy(http)
        state = Running(dev, address, base, TsWorker(address, base / "worker.log"))
        try:
            state.worker.wait_ready(FIRST_START_S)
            yield state
        finally:
            state.worker.stop()  # the one running now (a test may have restarted it)


@pytest.fixture
async def mcp(running: Running) -> AsyncIterator[McpClient]:
    async with client_for(running.dev.port) as client:
        yield client


@pytest.fixture
async def temporal(running: Running) -> Client:
    return await Client.connect(running.temporal_address)


async def waiting_for_approval(mcp: McpClient) -> tuple[str, list[str], dict[str, Any]]:
    """A ship_release task at its approval: its id, the statusMessages tasks/get showed on the
    way, and the task as it waits."""
    task_id = await mcp.create_task("ship_release", SHIP)
    seen: list[str] = []

    def asking(task: dict[str, Any]) -> bool:
        if task.get("statusMessage") and task["statusMessage"] not in seen:
            seen.append(task["statusMessage"])
        return bool(task["status"] == "input_required")

    return task_id, seen, await mcp.wait_for(task_id, asking, within=60)


def approve_answer(approved: bool = True) -> dict[str, Any]:
    return {"approve": {"action": "accept", "content": {"approve": approved}}}


async def published_progress(temporal: Client, task_id: str) -> list[dict[str, Any]]:
    """The progress of each task state the task workflow published (its memo upserts)."""
    history = await temporal.get_workflow_handle(task_id).fetch_history()
    found = []
    for event in history.events:
        if event.HasField("workflow_properties_modified_event_attributes"):
            memo = event.workflow_properties_modified_event_attributes.upserted_memo
            state = json.loads(memo.fields[MEMO_KEY].data)
            if "progress" in state and state["progress"] not in found:
                found.append(state["progress"])
    return found


async def test_it_reports_its_steps_asks_and_completes_with_its_structured_result(
    mcp: McpClient, temporal: Client
) -> None:
    task_id, seen, waiting = await waiting_for_approval(mcp)
    assert "step 1/3: building shop v2" in seen
    assert "step 2/3: migrating the database of shop" in seen
    assert seen.index("step 1/3: building shop v2") < seen.index(
        "step 2/3: migrating the database of shop"
    )
    assert waiting["statusMessage"] == "step 3/3: waiting for approval to switch shop to v2"
    (key,) = waiting["inputRequests"]
    request = waiting["inputRequests"][key]
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == APPROVAL
    assert request["params"]["requestedSchema"]["required"] == ["approve"]

    assert (await mcp.update_task(task_id, approve_answer())).result["resultType"] == "complete"
    done = await mcp.wait_terminal(task_id, within=30)
    assert done["status"] == "completed"
    assert done["result"]["isError"] is False
    structured = dict(done["result"]["structuredContent"])
    structured.pop("approvedBy", None)  # who answered, when the server knows (no auth here)
    assert structured == {
        "service": "shop",
        "version": "v2",
        "image": "registry.example/shop:v2",
        "switched": True,
    }
    assert done["result"]["content"] == [
        {"type": "text", "text": "shop v2 is live (image registry.example/shop:v2)"}
    ]
    # Where tasks/get reads: the task's state, step by step.
    assert await published_progress(temporal, task_id) == [
        {"progress": 0, "total": 3},
        {"progress": 1, "total": 3},
        {"progress": 2, "total": 3},
        {"progress": 3, "total": 3},
    ]


async def test_two_releases_waiting_at_once_in_one_worker_each_get_their_own_answer(
    mcp: McpClient,
) -> None:
    """One worker runs both workflows (and may run them in one V8 context): each question's
    answer reaches the workflow that asked it, whatever the order."""
    first, _, _ = await waiting_for_approval(mcp)
    second, _, _ = await waiting_for_approval(mcp)
    await mcp.update_task(second, {"approve": {"action": "decline"}})
    declined = await mcp.wait_terminal(second, within=30)
    assert declined["result"]["isError"] is True
    assert (await mcp.get_task(first)).result["status"] == "input_required"
    await mcp.update_task(first, approve_answer())
    approved = await mcp.wait_terminal(first, within=30)
    assert approved["result"]["structuredContent"]["switched"] is True


def operator_cli(running: Running, *args: str) -> subprocess.CompletedProcess[str]:
    """`mcp-tasks tasks ...` as an operator runs it, against the dev process's Temporal."""
    env = {**os.environ, "MCP_TASKS_TEMPORAL_ADDRESS": running.temporal_address}
    return subprocess.run(
        [MCP_TASKS, "tasks", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_the_approval_answered_with_the_operator_cli_completes_it(
    mcp: McpClient, running: Running
) -> None:
    task_id, _, _ = await waiting_for_approval(mcp)
    answered = operator_cli(
        running, "answer", task_id, "--set", "approve=true", "--set", "comment=go"
    )
    assert answered.returncode == 0, answered.stderr
    done = await mcp.wait_terminal(task_id, within=30)
    structured = done["result"]["structuredContent"]
    assert (done["status"], structured["switched"], structured["comment"]) == (
        "completed",
        True,
        "go",
    )
    assert structured["approvedBy"].startswith("operator:")


async def test_declined_it_rolls_back_and_ends_as_a_tool_error_saying_so(mcp: McpClient) -> None:
    task_id, _, _ = await waiting_for_approval(mcp)
    await mcp.update_task(task_id, {"approve": {"action": "decline"}})
    done = await mcp.wait_terminal(task_id, within=30)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert done["result"]["content"][0]["text"] == (
        "Declined: traffic of shop was not switched to v2; rolled back the migration of shop to v2"
    )
    assert done["result"]["structuredContent"] == {
        "service": "shop",
        "version": "v2",
        "switched": False,
    }


async def test_a_host_without_tasks_is_asked_in_the_attached_call(mcp: McpClient) -> None:
    elicitation: dict[str, Any] = {"elicitation": {}}
    first = (await mcp.call_tool("ship_release", SHIP, capabilities=elicitation)).result
    assert first["resultType"] == "input_required", first
    ((key, request),) = first["inputRequests"].items()
    assert request["params"]["message"] == APPROVAL
    extra = {
        "inputResponses": {key: approve_answer()["approve"]},
        "requestState": first["requestState"],
    }
    reply = await mcp.call_tool("ship_release", SHIP, capabilities=elicitation, extra=extra)
    done = reply.result
    assert done["resultType"] == "complete" and done["isError"] is False, done
    assert done["structuredContent"]["switched"] is True


async def test_a_host_without_elicitation_answers_with_the_follow_up_tools(
    mcp: McpClient,
) -> None:
    follow_up = (await mcp.call_tool("ship_release", SHIP, capabilities={})).result
    state = follow_up["structuredContent"]
    assert state["status"] == "input_required", follow_up
    answer = {"taskId": state["taskId"], "action": "accept", "content": {"approve": True}}
    responded = (await mcp.call_tool("task_respond", answer, capabilities={})).result
    assert responded.get("isError") is not True, responded
    done = await mcp.wait_terminal(state["taskId"], within=30)
    assert done["result"]["structuredContent"]["switched"] is True


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no {CHROMIUM} (Debian's chromium)")
async def test_the_inbox_approves_it_in_a_real_browser(running: Running, mcp: McpClient) -> None:
    """As the local user of `--auth none` (no sign-in), with a comment typed in the form."""
    task_id, _, _ = await waiting_for_approval(mcp)
    base = f"http://127.0.0.1:{running.dev.port}"
    async with chromium() as browser:
        page = await (await browser.new_context()).new_page()
        await page.goto(f"{base}/inbox")
        row = page.locator(f"tr[data-task='{task_id}']")
        await expect(row.locator(".question")).to_have_text(APPROVAL, timeout=20_000)
        await row.locator("a").click()
        await page.wait_for_url(f"{base}/inbox/tasks/{task_id}")
        await page.locator(f"form.answer [name='{FIELD_PREFIX}comment']").fill("looks good")
        await page.locator("form.answer button[value=approve]").click()
        done = await mcp.wait_terminal(task_id, within=30)
        structured = done["result"]["structuredContent"]
        assert (done["result"]["isError"], structured["switched"]) == (False, True)
        assert structured["comment"] == "looks good"
        await expect(page.locator("#live .pill")).to_have_text("completed", timeout=20_000)


async def test_unanswered_within_its_timeout_it_rolls_back_and_ends_as_a_tool_error(
    mcp: McpClient,
) -> None:
    task_id = await mcp.create_task("ship_release", {**SHIP, "approval_timeout_seconds": 2})
    await mcp.wait_status(task_id, "input_required", within=60)
    done = await mcp.wait_terminal(task_id, within=60)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    text = done["result"]["content"][0]["text"]
    assert text.startswith("No approval: ") and "withdrawn" in text
    assert text.endswith("; rolled back the migration of shop to v2")
    assert done["result"]["structuredContent"] == {
        "service": "shop",
        "version": "v2",
        "switched": False,
        "timedOut": True,
    }


def scheduled_activities(history: Any) -> list[str]:
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]


def activities_of(history: Any) -> list[tuple[str, str]]:
    """(activity type, how it ended) for each activity of a workflow history."""
    names: dict[int, str] = {}
    ended: list[tuple[str, str]] = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            names[event.event_id] = attributes.activity_type.name
        for outcome in ("completed", "failed", "canceled", "timed_out"):
            field = f"activity_task_{outcome}_event_attributes"
            if event.HasField(field):
                ended.append((names[getattr(event, field).scheduled_event_id], outcome))
    return ended


async def test_cancelled_the_typescript_workflow_rolls_back_before_it_stops(
    mcp: McpClient, temporal: Client
) -> None:
    task_id, _, _ = await waiting_for_approval(mcp)
    await mcp.cancel_task(task_id)
    assert (await mcp.wait_terminal(task_id, within=30))["status"] == "cancelled"
    child = temporal.get_workflow_handle(f"{task_id}-ShipRelease")
    assert (await child.describe()).status == WorkflowExecutionStatus.CANCELED
    assert activities_of(await child.fetch_history()) == [
        ("build", "completed"),
        ("migrate", "completed"),
        ("rollBack", "completed"),
    ]


async def test_a_kill_9_of_the_worker_while_the_question_waits_loses_nothing(
    mcp: McpClient, running: Running
) -> None:
    task_id, _, _ = await waiting_for_approval(mcp)
    running.worker.kill()
    # Answered while no worker of the team runs: the answer waits in Temporal as a signal.
    await mcp.update_task(task_id, approve_answer())
    assert (await mcp.get_task(task_id)).result["status"] in {"working", "input_required"}
    running.restart_worker()
    done = await mcp.wait_terminal(task_id, within=60)
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"]["switched"] is True


async def control(mcp: McpClient, method: str, task_id: str, **params: Any) -> dict[str, Any]:
    """A steering method as a client that declared the extension calls it; its result."""
    reply = await mcp.rpc(
        method,
        {"taskId": task_id, **params},
        headers={"Mcp-Name": task_id},
        capabilities=STEERING,
    )
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.result
    return result


async def status_seen_by(mcp: McpClient, task_id: str, capabilities: dict[str, Any]) -> str:
    return str((await mcp.get_task(task_id, capabilities=capabilities)).result["status"])


async def test_paused_at_its_approval_it_holds_before_the_switch_and_reads_its_steering_in_order(
    mcp: McpClient, temporal: Client
) -> None:
    task_id, _, _ = await waiting_for_approval(mcp)
    assert (await control(mcp, PAUSE, task_id))["resultType"] == "complete"
    for text in ("drain the eu pool first", "then the us one"):
        await control(mcp, STEER, task_id, message=text)
    await mcp.update_task(task_id, approve_answer())
    # Held at its safe point before the switch (it said so with mcp.paused): `paused` to a
    # client that declared the extension, `working` to the others, and no switch has run.
    deadline = time.monotonic() + 20
    while await status_seen_by(mcp, task_id, STEERING) != "paused":
        assert time.monotonic() < deadline, "the task was never shown paused"
        await asyncio.sleep(0.1)
    assert await status_seen_by(mcp, task_id, TASKS_AND_ELICITATION) == "working"
    child = temporal.get_workflow_handle(f"{task_id}-ShipRelease")
    assert scheduled_activities(await child.fetch_history()) == ["build", "migrate"]

    assert (await control(mcp, RESUME, task_id))["resultType"] == "complete"
    done = await mcp.wait_terminal(task_id, within=30)
    assert done["result"]["structuredContent"]["steering"] == [
        {"seq": 1, "message": "drain the eu pool first"},
        {"seq": 2, "message": "then the us one"},
    ]
    assert done["result"]["structuredContent"]["switched"] is True


async def test_run_on_its_own_it_reports_nothing_and_its_question_fails_its_workflow_task(
    temporal: Client,
) -> None:
    """Without a task workflow for a parent, reports are dropped (the steps run) and the
    question, which nobody could answer, fails the workflow task saying why: the workflow
    stays open, not failed, as any workflow task failure leaves it."""
    handle = await temporal.start_workflow(
        "ShipRelease", SHIP, id=f"ship-on-its-own-{uuid.uuid4()}", task_queue="ship-releases"
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            history = await handle.fetch_history()
            failures = [
                event.workflow_task_failed_event_attributes.failure.message
                for event in history.events
                if event.HasField("workflow_task_failed_event_attributes")
            ]
            if failures:
                break
            assert time.monotonic() < deadline, "no workflow task failed"
            await asyncio.sleep(0.2)
        assert failures[0] == (
            "ShipRelease is not running as an MCP task (it has no parent workflow): there is no "
            "task to send mcp.ask to"
        )
        assert scheduled_activities(history) == ["build", "migrate"]
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    finally:
        await handle.terminate("test over")
