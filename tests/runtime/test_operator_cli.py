"""`mcp-tasks tasks list|show|answer` as operators run it: subprocesses against a running
`mcp-tasks dev` (tokens auth, demo tools), the tasks created and checked over MCP."""

from __future__ import annotations

import asyncio
import base64
import getpass
import json
import os
import pty
import select
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
import pytest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

from mcp_server.protocol.frame.errors import INVALID_PARAMS
from mcp_server.runtime.devserver import free_port
from mcp_server.runtime.operator_cli import (
    EXIT_INVALID,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    OPERATOR_DIGEST,
)
from mcp_server.runtime.tokens import add_token
from mcp_server.tasks.listing import WAITING_SINCE_KEY
from mcp_server.tasks.store import initial_search_attributes
from mcp_server.temporal.connection import connect
from mcp_tasks.contracts.task_state import MEMO_KEY, TaskInput, TaskState, iso_timestamp
from mcp_tasks.identity import Principal
from mcp_tasks.settings import Settings
from tests.dev_process import MCP_TASKS, DevProcess, client_for, reaped
from tests.mcp_client import TASKS, McpClient

pytestmark = pytest.mark.slow
CLI_TIMEOUT_S = 60


@dataclass
class Running:
    port: int
    env: dict[str, str]  # the CLI's: the dev process's Temporal
    token: str


@pytest.fixture(scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    base = tmp_path_factory.mktemp("operator-cli")
    tokens = base / "tokens.json"
    token = add_token(tokens, "alice", [])
    port, temporal_port = free_port(), free_port()
    key = base64.b64encode(os.urandom(32)).decode()  # the CLI decodes what the server encrypts
    dev = DevProcess(
        base / "data",
        port,
        temporal_port,
        env={
            "MCP_TASKS_AUTH": "tokens",
            "MCP_TASKS_TOKENS_FILE": str(tokens),
            "MCP_TASKS_TOOL_MODULES": "mcp_server.tools.demo",
            "MCP_TASKS_PAYLOAD_KEY": key,
        },
    )
    with reaped([dev]):
        async with httpx.AsyncClient(timeout=15) as http:
            await dev.wait_healthy(http)
        env = {
            **os.environ,
            "MCP_TASKS_TEMPORAL_ADDRESS": f"127.0.0.1:{temporal_port}",
            "MCP_TASKS_PAYLOAD_KEY": key,
        }
        yield Running(port, env, token)


@pytest.fixture
async def mcp(running: Running) -> AsyncIterator[McpClient]:
    async with client_for(running.port) as client:
        client.extra_headers["Authorization"] = f"Bearer {running.token}"
        yield client


def cli(
    running: Running, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MCP_TASKS, "tasks", *args],
        env=env or running.env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def listed(running: Running, *args: str) -> list[str]:
    done = cli(running, "list", "--json", *args)
    assert done.returncode == 0, done.stderr
    return [json.loads(line)["taskId"] for line in done.stdout.splitlines()]


def eventually_listed(
    running: Running, args: tuple[str, ...], holds: Callable[[list[str]], bool]
) -> list[str]:
    """`tasks list` until `holds` (Temporal's visibility store lags its histories a little)."""
    deadline = time.monotonic() + 20
    while not holds(found := listed(running, *args)):
        assert time.monotonic() < deadline, f"tasks list {args}: {found}"
    return found


async def waiting_approval(mcp: McpClient, **arguments: object) -> str:
    task_id = await mcp.create_task("request_approval", {"message": "Ship 1.2?", **arguments})
    await mcp.wait_status(task_id, "input_required", within=10)
    return task_id


async def test_list_finds_a_waiting_task_by_status_tool_and_owner(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp)
    # Workflows of the namespace that are not MCP tasks, with and without an McpTool.
    temporal = await Client.connect(running.env["MCP_TASKS_TEMPORAL_ADDRESS"])
    tool = SearchAttributeKey.for_keyword("McpTool")
    others = [
        await temporal.start_workflow(
            "NotAnMcpTask",
            id=f"other-{n}-{uuid.uuid4()}",
            task_queue="nobody-polls",
            search_attributes=attributes,
        )
        for n, attributes in enumerate(
            [TypedSearchAttributes([SearchAttributePair(tool, "request_approval")]), None]
        )
    ]
    query = f'McpTool="request_approval" AND WorkflowId="{others[0].id}"'
    deadline = time.monotonic() + 20
    while not [found async for found in temporal.list_workflows(query)]:  # indexed: listable
        assert time.monotonic() < deadline, "the other workflow never became visible"
        await asyncio.sleep(0.1)
    everything = eventually_listed(running, (), lambda ids: task_id in ids)
    assert not {other.id for other in others} & set(everything)
    for other in others:
        await other.terminate()
    eventually_listed(running, ("--status", "input_required"), lambda ids: task_id in ids)
    assert task_id in listed(running, "--tool", "request_approval")
    assert task_id not in listed(running, "--tool", "slow_compute")
    assert task_id in listed(running, "--owner", "alice", "--status", "input_required")
    assert task_id in listed(running, "--owner", Principal("alice").digest)
    assert task_id not in listed(running, "--owner", "bob")
    assert task_id not in listed(running, "--status", "completed")
    table = cli(running, "list", "--tool", "request_approval")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["TASK", "ID", "TOOL", "STATUS", "AGE", "WAITING", "STATUS", "MESSAGE"]
    (row,) = [row for row in rows if row.startswith(task_id)]
    assert row.split()[1:3] == ["request_approval", "input_required"]
    assert row.split()[4] != "-"  # it waits: for how long
    assert "Waiting for a decision" in row
    await mcp.cancel_task(task_id)
    await mcp.wait_terminal(task_id, within=20)
    eventually_listed(running, ("--status", "cancelled"), lambda ids: task_id in ids)


async def test_list_says_how_long_a_task_waits_and_finds_the_waits_longer_than_a_threshold(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp)
    temporal = await Client.connect(running.env["MCP_TASKS_TEMPORAL_ADDRESS"])
    handle = temporal.get_workflow_handle(task_id)
    since = (await handle.describe()).typed_search_attributes.get(WAITING_SINCE_KEY)
    assert since is not None  # set by the workflow as it started to wait
    found = eventually_listed(running, ("--waiting-longer-than", "1s"), lambda ids: task_id in ids)
    assert task_id not in listed(running, "--waiting-longer-than", "1d")
    done = cli(running, "list", "--json", "--status", "input_required")
    (line,) = [json.loads(x) for x in done.stdout.splitlines() if task_id in x]
    assert line["waitingSince"] == iso_timestamp(since) and line["taskQueue"] == "mcp-tasks"
    assert found == sorted(found, key=waiting_order(running))  # the longest wait first
    await mcp.cancel_task(task_id)
    await mcp.wait_terminal(task_id, within=20)
    assert (await handle.describe()).typed_search_attributes.get(WAITING_SINCE_KEY) is None


def waiting_order(running: Running) -> Callable[[str], str]:
    done = cli(running, "list", "--json", "--status", "input_required", "--limit", "1000")
    since = {
        entry["taskId"]: entry["waitingSince"]
        for entry in map(json.loads, done.stdout.splitlines())
    }
    return lambda task_id: str(since.get(task_id))


async def test_list_shows_this_deployments_task_queue_unless_told_otherwise(
    running: Running, mcp: McpClient
) -> None:
    # Another deployment's task in the same namespace: an MCP task (memo, search attributes)
    # on its own task queue, which no worker here polls.
    other = await connect(Settings.from_env(running.env))
    task = TaskInput(
        task_id=f"mcp-task-{uuid.uuid4().hex}",
        tool="request_approval",
        arguments={},
        created_at=iso_timestamp(datetime.now(UTC)),
        ttl_ms=None,
        poll_interval_ms=1000,
        owner=Principal("alice").digest,
    )
    handle = await other.start_workflow(
        "RequestApproval",
        task,
        id=task.task_id,
        task_queue="another-team",
        memo={MEMO_KEY: TaskState.initial(task, "Queued").to_memo()},
        search_attributes=initial_search_attributes(task),
    )
    try:
        ours = await waiting_approval(mcp)
        eventually_listed(running, ("--all-queues",), lambda ids: {ours, task.task_id} <= set(ids))
        mine = listed(running)
        assert ours in mine and task.task_id not in mine
        assert listed(running, "--task-queue", "another-team") == [task.task_id]
        await mcp.cancel_task(ours)
    finally:
        await handle.terminate()


async def test_show_prints_the_form_and_the_operator_detail(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp, require_reason=True)
    page = cli(running, "show", task_id)
    assert page.returncode == 0, page.stderr
    text = page.stdout
    assert "status:         input_required" in text and "[decision] elicitation/create" in text
    assert "message: Ship 1.2?" in text
    assert "decision: string; required; one of approve, reject" in text
    assert "reason: string; required; min length 1; max length 2000" in text
    assert f"owner (digest): {Principal('alice').digest}" in text
    shown = cli(running, "show", task_id, "--json")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert document["task"]["status"] == "input_required"
    schema = document["task"]["inputRequests"]["decision"]["params"]["requestedSchema"]
    assert schema["required"] == ["decision", "reason"]
    operator = document["operator"]
    assert operator["owner"] == Principal("alice").digest and operator["tool"] == "request_approval"
    assert operator["executionStatus"] == "running" and operator["historyLength"] > 0
    await mcp.cancel_task(task_id)


async def test_show_and_list_link_the_task_to_the_teams_web_ui(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp)
    env = {**running.env, "MCP_TASKS_TEMPORAL_UI_URL": "https://temporal.example.com/"}
    page = cli(running, "show", task_id, env=env)
    assert page.returncode == 0, page.stderr
    run_id = json.loads(cli(running, "show", task_id, "--json", env=env).stdout)["operator"]
    url = f"https://temporal.example.com/namespaces/default/workflows/{task_id}"
    assert f"Web UI:         {url}/{run_id['runId']}/history" in page.stdout
    assert run_id["webUi"] == f"{url}/{run_id['runId']}/history"
    lines = cli(running, "list", "--status", "input_required", "--json", env=env).stdout
    mine = [json.loads(line) for line in lines.splitlines() if task_id in line]
    assert mine and mine[0]["webUi"].startswith(url)
    table = cli(running, "list", "--status", "input_required", env=env).stdout
    assert f"  {url}/" in table
    assert "Web UI" not in cli(running, "show", task_id).stdout  # not configured: no link
    await mcp.cancel_task(task_id)


def listed_to_a_closed_pipe(running: Running) -> tuple[int, str]:
    """`tasks list --json | head -1`: the reader is gone before the first line is written."""
    listing = subprocess.Popen(
        [MCP_TASKS, "tasks", "list", "--status", "input_required", "--json"],
        env=running.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with listing:
        assert listing.stdout is not None and listing.stderr is not None
        listing.stdout.close()
        errors = listing.stderr.read().decode()
        return listing.wait(timeout=CLI_TIMEOUT_S), errors


async def test_a_reader_that_stops_early_gets_no_traceback(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp)
    eventually_listed(running, ("--status", "input_required"), lambda found: task_id in found)
    code, errors = await asyncio.to_thread(listed_to_a_closed_pipe, running)
    assert code == 0, errors
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors
    await mcp.cancel_task(task_id)


async def test_an_operators_answer_writes_an_audit_line_and_a_span(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp)
    env = {**running.env, "MCP_TASKS_LOG_FORMAT": "json", "OTEL_TRACES_EXPORTER": "console"}
    done = cli(running, "answer", task_id, "--set", "decision=approve", env=env)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    [audit] = [line for line in lines if line.get("event") == "task.update"]
    assert audit["logger"] == "mcp_server.protocol.audit" and audit["taskId"] == task_id
    assert audit["by"] == f"operator:{getpass.getuser()}" and audit["outcome"] == "ok"
    assert audit["keys"] == ["decision"] and audit["method"] == "operator-cli"
    [span] = [line for line in lines if line.get("name") == "mcp-tasks tasks answer"]
    assert span["attributes"]["mcp.task.id"] == task_id
    # The audit line was written inside the span: the two join on the trace id.
    assert f"0x{audit['trace_id']}" == span["context"]["trace_id"]
    await mcp.wait_status(task_id, "completed", within=15)


async def test_an_operators_cancel_ends_the_task_with_an_audit_line_and_a_span(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp)
    env = {**running.env, "MCP_TASKS_LOG_FORMAT": "json", "OTEL_TRACES_EXPORTER": "console"}
    done = cli(running, "cancel", task_id, env=env)
    assert done.returncode == 0, done.stderr
    assert f"cancellation of {task_id} requested" in done.stdout
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    [audit] = [line for line in lines if line.get("event") == "task.cancel"]
    assert audit["taskId"] == task_id and audit["outcome"] == "ok"
    assert audit["by"] == f"operator:{getpass.getuser()}" and audit["method"] == "operator-cli"
    [span] = [line for line in lines if line.get("name") == "mcp-tasks tasks cancel"]
    assert f"0x{audit['trace_id']}" == span["context"]["trace_id"]
    assert (await mcp.wait_terminal(task_id, within=20))["status"] == "cancelled"
    again = cli(running, "cancel", task_id)
    assert again.returncode == EXIT_REFUSED
    assert again.stderr.strip() == f"mcp-tasks: task {task_id} is cancelled: nothing to cancel"


async def test_answer_with_set_completes_the_task_with_the_decision(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp)
    done = cli(running, "answer", task_id, "--set", "decision=approve", "--set", "reason=ok")
    assert done.returncode == 0, done.stderr
    assert f"answered 'decision' of {task_id} (accept)" in done.stdout
    result = (await mcp.wait_terminal(task_id, within=20))["result"]
    assert result["structuredContent"]["decision"] == "approved"
    assert result["structuredContent"]["reason"] == "ok"
    page = cli(running, "show", task_id)
    assert "status:         completed" in page.stdout and "Decision: approved (ok)" in page.stdout
    again = cli(running, "answer", task_id, "--set", "decision=reject")
    assert again.returncode == EXIT_REFUSED
    assert again.stderr.strip() == f"mcp-tasks: task {task_id} is completed: nothing to answer"


async def test_a_request_approval_whose_caller_cannot_show_the_form_is_answered_here(
    running: Running, mcp: McpClient
) -> None:
    """The one rule for questions the caller cannot answer: no -32021 up front, the task waits
    (shown `working` to that client, saying where it is answered) and an operator answers."""
    created = await mcp.call_tool("request_approval", {"message": "Ship 1.4?"}, capabilities=TASKS)
    task_id = created.result["taskId"]
    await mcp.wait_status(task_id, "input_required", within=10)
    unaware = (await mcp.get_task(task_id, capabilities=TASKS)).result
    assert unaware["status"] == "working" and "inputRequests" not in unaware
    assert f"mcp-tasks tasks answer {task_id}" in unaware["statusMessage"]
    done = cli(running, "answer", task_id, "--set", "decision=approve")
    assert done.returncode == 0, done.stderr
    result = (await mcp.wait_terminal(task_id, within=20))["result"]
    assert result["structuredContent"]["decision"] == "approved"


async def test_an_invalid_answer_exits_2_naming_the_field_and_the_task_still_waits(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp, require_reason=True)
    for args, problem in [
        (["--set", "decision=maybe", "--set", "reason=x"], 'field "decision" must be one of'),
        (["--set", "decision=approve"], 'field "reason" is required'),
        (["--set", "decision=approve", "--set", "reason="], 'field "reason" must be at least 1'),
        (["--set", "decison=approve"], 'field "decison" is not in the form'),
        (["--json", '{"decision": true, "reason": "x"}'], 'field "decision" must be a string'),
        (["--decline", "--set", "reason=x"], "--set and --json carry an accepted answer"),
    ]:
        refused = cli(running, "answer", task_id, *args)
        assert refused.returncode == EXIT_INVALID, (args, refused.stderr)
        assert problem in refused.stderr and len(refused.stderr.splitlines()) == 1, args
    assert (await mcp.get_task(task_id)).result["status"] == "input_required"
    other = cli(running, "answer", task_id, "--key", "nope", "--set", "decision=approve")
    assert other.returncode == EXIT_REFUSED and "no outstanding request 'nope'" in other.stderr
    declined = cli(running, "answer", task_id, "--decline")
    assert declined.returncode == 0, declined.stderr
    result = (await mcp.wait_terminal(task_id, within=20))["result"]
    assert result["structuredContent"]["decision"] == "dismissed"


def _read(leader: int, deadline: float, output: bytes) -> bytes:
    """The next output on the terminal; b"" once the process closed it."""
    while not select.select([leader], [], [], 0.2)[0]:
        assert time.monotonic() < deadline, output.decode(errors="replace")
    try:
        return os.read(leader, 4096)
    except OSError:  # EIO: the process closed the terminal
        return b""


def interact(running: Running, args: list[str], script: list[tuple[str, str]]) -> tuple[int, str]:
    """Run the CLI on a pseudo-terminal: on each expected text, type its reply."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [MCP_TASKS, "tasks", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=running.env,
        start_new_session=True,
    )
    os.close(follower)
    output, seen, deadline = b"", 0, time.monotonic() + CLI_TIMEOUT_S
    try:
        for expected, reply in script:
            while expected.encode() not in output[seen:]:
                chunk = _read(leader, deadline, output)
                assert chunk, f"never saw {expected!r}: {output.decode(errors='replace')}"
                output += chunk
            seen = output.index(expected.encode(), seen) + len(expected)
            if reply:
                os.write(leader, reply.encode())
        while chunk := _read(leader, deadline, output):
            output += chunk
        return process.wait(timeout=CLI_TIMEOUT_S), output.decode(errors="replace")
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()


async def test_answering_on_a_terminal_asks_each_field(running: Running, mcp: McpClient) -> None:
    task_id = await waiting_approval(mcp, require_reason=True)
    code, output = interact(
        running,
        ["answer", task_id],
        [
            ("accept or decline? (accept/y, decline/n) [accept]: ", "sure\n"),
            ("type accept (or y) to answer, decline (or n) to refuse", ""),
            ("accept or decline? (accept/y, decline/n) [accept]: ", "y\n"),
            ("Decision (decision: 1=approve, 2=reject, required): ", "maybe\n"),
            ('must be one of "approve", "reject"', ""),
            ("Decision (decision: 1=approve, 2=reject, required): ", "2\n"),
            ("Reason (reason, required): ", "\n"),
            ('"reason" is required', ""),
            ("Reason (reason, required): ", "not yet\n"),
        ],
    )
    assert code == 0, output
    assert "message: Ship 1.2?" in output and f"answered 'decision' of {task_id}" in output
    result = (await mcp.wait_terminal(task_id, within=20))["result"]
    assert result["structuredContent"]["decision"] == "rejected"
    assert result["structuredContent"]["reason"] == "not yet"


def test_an_unknown_task_exits_1(running: Running) -> None:
    missing = cli(running, "show", "mcp-task-00000000000000000000000000000000")
    assert missing.returncode == EXIT_REFUSED
    assert missing.stderr.strip() == (
        "mcp-tasks: no task mcp-task-00000000000000000000000000000000 in namespace default"
    )
    unanswerable = cli(running, "answer", "nope", "--set", "decision=approve")
    assert unanswerable.returncode == EXIT_REFUSED and "no task nope" in unanswerable.stderr


def test_bad_filters_are_refused_before_temporal_is_asked(running: Running) -> None:
    bogus = cli(running, "list", "--status", "bogus")
    assert bogus.returncode == EXIT_INVALID
    assert "argument --status: invalid choice: 'bogus'" in bogus.stderr
    assert "input_required" in bogus.stderr
    for flag, value in [("--tool", 'x" OR McpTool!="y'), ("--approver", "scope:a'b")]:
        quoted = cli(running, "list", flag, value)
        assert quoted.returncode == EXIT_INVALID, quoted.stderr
        assert len(quoted.stderr.splitlines()) == 1 and "holds only" in quoted.stderr


def test_temporal_unreachable_exits_3(running: Running) -> None:
    elsewhere = {**running.env, "MCP_TASKS_TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}"}
    done = cli(running, "list", env=elsewhere)
    assert done.returncode == EXIT_UNREACHABLE
    assert done.stderr.startswith("mcp-tasks: cannot reach Temporal at 127.0.0.1:")
    (line,) = done.stderr.strip().splitlines()
    assert line.count("cannot reach Temporal") == 1, line  # said once, then where and why
    assert line.endswith("(namespace default; MCP_TASKS_TEMPORAL_ADDRESS)"), line


async def test_without_the_payload_key_the_cli_says_which_setting_is_missing(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp)
    keyless = {k: v for k, v in running.env.items() if k != "MCP_TASKS_PAYLOAD_KEY"}
    for args in (["show", task_id], ["list"]):
        done = cli(running, *args, env=keyless)
        assert done.returncode == EXIT_REFUSED, (args, done.stderr)
        assert "MCP_TASKS_PAYLOAD_KEY is not set" in done.stderr, done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
    await mcp.cancel_task(task_id)


async def test_approvers_are_listed_and_shown_and_an_operator_answers_past_them(
    running: Running, mcp: McpClient
) -> None:
    task_id = await waiting_approval(mcp, approvers=["release-manager", "scope:release"])
    by_name = ("--approver", "release-manager", "--status", "input_required")
    eventually_listed(running, by_name, lambda ids: task_id in ids)
    assert task_id in listed(running, "--approver", "scope:release")
    assert task_id not in listed(running, "--approver", "alice")
    page = cli(running, "show", task_id).stdout
    assert "approvers[decision]: release-manager, scope:release" in page
    assert "requestedBy:    alice" in page
    # The caller may not answer (the approvers do); an operator with Temporal access may.
    refused = await mcp.update_task(
        task_id, {"decision": {"action": "accept", "content": {"decision": "approve"}}}
    )
    assert refused.error["code"] == INVALID_PARAMS
    done = cli(running, "answer", task_id, "--set", "decision=approve")
    assert done.returncode == 0, done.stderr
    result = (await mcp.wait_terminal(task_id, within=20))["result"]
    login = getpass.getuser()
    assert result["structuredContent"]["decidedByName"] == f"operator:{login}"
    assert result["structuredContent"]["decidedBy"] == OPERATOR_DIGEST
    shown = json.loads(cli(running, "show", task_id, "--json").stdout)
    assert shown["operator"]["answeredBy"] == {"decision": f"operator:{login}"}
    assert shown["operator"]["requestedBy"] == "alice"
    eventually_listed(running, by_name[:2], lambda ids: task_id not in ids)  # none outstanding
