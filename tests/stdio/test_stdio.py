"""The stdio transport as a host drives it: JSON lines written to stdin and read from stdout
(every line must be one JSON-RPC message), both protocol eras, against the session's Temporal
dev server. The protocol behaviour runs in-process: the same StdioServer that `mcp-tasks stdio`
runs, on OS pipes instead of the process's stdin and stdout, with the session stack's worker.
A real `mcp-tasks stdio` subprocess is kept where the process is what is tested: EOF ends it
with exit 0, its own worker runs the tasks, its stdout carries nothing but the protocol; and
`--dev`, which shares one embedded Temporal per data dir."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mcp_server.protocol.frame import errors
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.stdio.server import StdioServer
from tests.conftest import Stack
from tests.dev_process import (
    MCP_TASKS,
    alive,
    descendants,
    wait_gone,
)
from tests.mcp_client import TASKS, TASKS_AND_ELICITATION, VERSION, Answer
from tests.wire_schemas import assert_valid, assert_valid_legacy

REPO = Path(__file__).resolve().parents[2]
LEGACY_VERSION = "2025-11-25"
TERMINAL = {"completed", "failed", "cancelled"}
ACCEPT_CONFIRM = {"action": "accept", "content": {"confirm": True}}
Answerer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        **extra,
    }


@dataclass
class Reply(Answer):
    body: dict[str, Any]
    # Messages that came before the response: notifications, and requests of the server.
    messages: list[dict[str, Any]] = field(default_factory=list)


class StdioHost:
    """What an MCP host does with a server it spawned: lines in, lines out, stderr to a log."""

    def __init__(
        self, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader, log_path: Path
    ) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self.log_path = log_path
        self._ids = itertools.count(1)
        # Messages read while waiting for another response, by id (responses) or in order.
        self.early: list[dict[str, Any]] = []

    def log(self) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return self.log_path.read_text(errors="replace")[-3000:]

    def write(self, data: bytes) -> None:
        """Raw bytes to stdin, as a faulty host might write them."""
        self.stdin.write(data)

    async def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")
        await self.stdin.drain()

    async def next_message(self, within: float = 30) -> dict[str, Any]:
        if self.early:
            return self.early.pop(0)
        async with asyncio.timeout(within):
            line = await self.stdout.readline()
        assert line, f"stdout closed; stderr ends with:\n{self.log()}"
        message = json.loads(line)  # stdout carries JSON-RPC messages and nothing else
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line
        return message

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        request_id: str | int | None = None,
        answer: Answerer | None = None,
        within: float = 60,
    ) -> Reply:
        request_id = next(self._ids) if request_id is None else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.response(request_id, answer=answer, within=within)

    async def response(
        self, request_id: str | int, *, answer: Answerer | None = None, within: float = 60
    ) -> Reply:
        seen: list[dict[str, Any]] = []
        kept: list[dict[str, Any]] = []
        async with asyncio.timeout(within):
            while True:
                message = await self.next_message(within)
                if "method" not in message and message.get("id") == request_id:
                    self.early = kept + self.early
                    return Reply(message, seen)
                if "method" not in message:
                    kept.append(message)  # another request's response: for its own reader
                    continue
                seen.append(message)
                if "id" in message and answer is not None:
                    result = await answer(message)
                    await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = await self.request(
            "initialize",
            {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {"elicitation": {}} if capabilities is None else capabilities,
                "clientInfo": {"name": "stdio-tests", "version": "0"},
            },
        )
        assert_valid_legacy(reply.body, "initialize")
        await self.notify("notifications/initialized")
        return reply.result

    async def close(self, within: float = 30) -> int:
        """Close stdin, as a host does to stop its server; how the server ended (0: cleanly)."""
        raise NotImplementedError


class ProcessHost(StdioHost):
    """`mcp-tasks stdio ARGS` as a subprocess."""

    def __init__(self, process: asyncio.subprocess.Process, log_path: Path) -> None:
        assert process.stdin is not None and process.stdout is not None
        super().__init__(process.stdin, process.stdout, log_path)
        self.process = process

    @classmethod
    async def start(cls, *args: str, env: dict[str, str], log_path: Path) -> ProcessHost:
        with log_path.open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                MCP_TASKS,
                "stdio",
                *args,
                env=env,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                limit=16 * 1024 * 1024,
                start_new_session=True,
            )
        return cls(process, log_path)

    async def close(self, within: float = 30) -> int:
        """Close stdin, as a host does to stop its server; the exit code."""
        self.stdin.close()
        async with asyncio.timeout(within):
            return await self.process.wait()

    def kill_tree(self) -> None:
        for pid in [self.process.pid, *descendants(self.process.pid)]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


class InProcessHost(StdioHost):
    """The StdioServer of `mcp-tasks stdio`, in this process on OS pipes, serving the session
    stack's settings, tools and Temporal client (the stack's worker runs its tasks)."""

    def __init__(
        self,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        serving: asyncio.Task[None],
        log_path: Path,
    ) -> None:
        super().__init__(stdin, stdout, log_path)
        self.serving = serving

    @classmethod
    async def start(cls, stack: Stack, log_path: Path) -> InProcessHost:
        loop = asyncio.get_running_loop()
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        reader, writer = os.fdopen(stdin_read, "rb"), os.fdopen(stdout_write, "wb")
        server = StdioServer(stack.settings, stack.registry, stack.client, reader, writer)

        async def serve() -> None:
            try:
                await server.serve()
            finally:
                writer.close()  # the host reads EOF on stdout
                reader.close()

        serving = asyncio.create_task(serve())
        stdout = asyncio.StreamReader(limit=16 * 1024 * 1024, loop=loop)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stdout, loop=loop), os.fdopen(stdout_read, "rb")
        )
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop),
            os.fdopen(stdin_write, "wb"),
        )
        stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        return cls(stdin, stdout, serving, log_path)

    async def close(self, within: float = 30) -> int:
        """Close stdin; 0 once the server has served its last message and returned."""
        if not self.stdin.is_closing():
            self.stdin.close()
        async with asyncio.timeout(within):
            await self.serving
        return 0


@pytest.fixture
def stdio_env(temporal: TemporalDevServer) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "MCP_TASKS_TEMPORAL_ADDRESS": temporal.address,
        "MCP_TASKS_TASK_QUEUE": f"tests-stdio-{uuid.uuid4()}",
        "MCP_TASKS_TOOLSET": "conformance",
        "MCP_TASKS_TOOL_MODULES": "mcp_server.tools.demo",
        "MCP_TASKS_STATE_SECRET": "s" * 32,
    }


@pytest.fixture
async def host(stack: Stack, tmp_path: Path) -> AsyncIterator[StdioHost]:
    running = await InProcessHost.start(stack, tmp_path / "stdio.log")
    try:
        yield running
    finally:
        if not running.serving.done():
            try:
                await running.close()
            finally:
                running.serving.cancel()


@pytest.fixture
async def process_host(stdio_env: dict[str, str], tmp_path: Path) -> AsyncIterator[ProcessHost]:
    running = await ProcessHost.start(env=stdio_env, log_path=tmp_path / "stdio.log")
    try:
        yield running
    finally:
        if running.process.returncode is None:
            try:
                await running.close()
            finally:
                running.kill_tree()


async def _confirm(request: dict[str, Any]) -> dict[str, Any]:
    assert request["method"] == "elicitation/create"
    return ACCEPT_CONFIRM


async def _wait_task(
    host: StdioHost, task_id: str, done: Callable[[dict[str, Any]], bool], within: float = 30
) -> dict[str, Any]:
    async with asyncio.timeout(within):
        while True:
            reply = await host.request(
                "tasks/get", {"taskId": task_id, "_meta": meta(TASKS_AND_ELICITATION)}
            )
            assert_valid("tasks/get", reply.body)
            if done(reply.result):
                return reply.result
            await asyncio.sleep(0.1)


# ----- 2026-07-28 ----------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_2026_request_on_stdin_is_answered_on_stdout_and_eof_ends_the_process(
    process_host: ProcessHost,
) -> None:
    host = process_host
    reply = await host.request("tools/list", {"_meta": meta()})
    assert_valid("tools/list", reply.body)
    names = {tool["name"] for tool in reply.result["tools"]}
    assert {"greet", "confirm_delete", "slow_compute", "deploy"} <= names
    server_info = reply.result["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert server_info["name"] == "mcp-tasks-temporal"
    assert await host.close() == 0


@pytest.mark.slow
async def test_a_2026_task_runs_on_the_stdio_process_own_worker_to_completion(
    process_host: ProcessHost,
) -> None:
    host = process_host  # the task queue is the process's own: only its embedded worker polls it
    arguments = {"seconds": 0.3, "label": "stdio"}
    created = await host.request(
        "tools/call", {"name": "slow_compute", "arguments": arguments, "_meta": meta(TASKS)}
    )
    assert_valid("tools/call", created.body)
    assert created.result["resultType"] == "task"
    done = await _wait_task(host, created.result["taskId"], lambda t: t["status"] == "completed")
    assert "stdio" in done["result"]["content"][0]["text"]


async def test_a_long_call_does_not_hold_up_a_tasks_get(host: StdioHost) -> None:
    created = await host.request(
        "tools/call",
        {"name": "slow_compute", "arguments": {"seconds": 0}, "_meta": meta(TASKS)},
    )
    task_id = created.result["taskId"]
    # Without the tasks extension, slow_compute runs attached: the call waits for the task.
    await host.send(
        {
            "jsonrpc": "2.0",
            "id": "long",
            "method": "tools/call",
            "params": {
                "name": "slow_compute",
                "arguments": {"seconds": 3, "label": "long"},
                "_meta": meta(),
            },
        }
    )
    got = await host.request("tasks/get", {"taskId": task_id, "_meta": meta(TASKS)}, within=10)
    assert got.result["taskId"] == task_id
    assert not host.early, "the long call answered before the tasks/get it should not block"
    long = await host.response("long", within=30)
    assert "long" in long.result["content"][0]["text"]


async def test_an_attached_runs_progress_goes_to_stdout_before_its_result(
    host: StdioHost,
) -> None:
    reply = await host.request(
        "tools/call",
        {
            "name": "slow_compute",
            "arguments": {"seconds": 0.5, "label": "p"},
            "_meta": meta(progressToken="tok-1"),
        },
    )
    assert "p" in reply.result["content"][0]["text"]
    progress = [m for m in reply.messages if m["method"] == "notifications/progress"]
    assert progress and {m["params"]["progressToken"] for m in progress} == {"tok-1"}


async def test_a_listen_stream_is_acknowledged_on_stdout_and_ended_by_cancelled(
    host: StdioHost,
) -> None:
    await host.send(
        {
            "jsonrpc": "2.0",
            "id": "listen-1",
            "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": meta()},
        }
    )
    acknowledged = await host.next_message()
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    assert acknowledged["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
    await host.notify("notifications/cancelled", {"requestId": "listen-1"})
    listed = await host.request("tools/list", {"_meta": meta()})
    assert listed.result["tools"] and not listed.messages and not host.early


async def test_protocol_errors_are_answered_with_their_codes_and_the_connection_goes_on(
    host: StdioHost,
) -> None:
    await host.send({"jsonrpc": "2.0", "id": "raw", "method": "tools/list"})  # no _meta
    assert (await host.response("raw")).error["code"] == errors.INVALID_PARAMS
    host.write(b"{not json\n")
    parse_error = await host.next_message()
    assert parse_error["error"]["code"] == errors.PARSE_ERROR and "id" not in parse_error
    unknown = await host.request("ping", {"_meta": meta()})
    assert unknown.error["code"] == errors.METHOD_NOT_FOUND
    newer = await host.request(
        "tools/list", {"_meta": {**meta(), "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}
    )
    assert newer.error["code"] == errors.UNSUPPORTED_PROTOCOL_VERSION
    assert newer.error["data"]["requested"] == "2099-01-01"
    too_large = b'{"jsonrpc":"2.0","id":"big","method":"tools/list","params":{"x":"' + b"x" * (
        2 * 1024 * 1024
    )
    host.write(too_large + b'"}}\n')
    dropped = await host.next_message()
    assert dropped["error"]["code"] == errors.INVALID_REQUEST and "id" not in dropped
    await host.send(
        {
            "jsonrpc": "2.0",
            "id": "twice",
            "method": "tools/call",
            "params": {"name": "slow_compute", "arguments": {"seconds": 1}, "_meta": meta()},
        }
    )
    reused = await host.request("tools/list", {"_meta": meta()}, request_id="twice")
    assert reused.error["code"] == errors.INVALID_REQUEST
    assert "content" in (await host.response("twice")).result
    greeted = await host.request(
        "tools/call", {"name": "greet", "arguments": {"name": "Ada"}, "_meta": meta()}
    )
    assert greeted.result["content"][0]["text"] == "Hello, Ada!"


# ----- 2025-11-25 ----------------------------------------------------------------------------


async def test_initialize_opens_the_2025_era_for_the_connection_and_greet_answers(
    host: StdioHost,
) -> None:
    result = await host.initialize()
    assert result["protocolVersion"] == LEGACY_VERSION
    assert result["capabilities"]["tasks"]["requests"]["tools"]["call"] == {}
    assert (await host.request("ping")).result == {}
    tools = {t["name"]: t for t in (await host.request("tools/list")).result["tools"]}
    assert tools["slow_compute"]["execution"] == {"taskSupport": "optional"}
    reply = await host.request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    assert_valid_legacy(reply.body, "tools/call")
    assert reply.result["content"][0]["text"] == "Hello, Ada!"
    # A message that names a protocolVersion is still served as 2026-07-28.
    modern = await host.request("tools/list", {"_meta": meta()})
    assert "io.modelcontextprotocol/serverInfo" in modern.result["_meta"]


async def test_a_2025_task_is_created_with_the_task_parameter_and_its_result_awaited(
    host: StdioHost,
) -> None:
    await host.initialize()
    created = await host.request(
        "tools/call",
        {"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "old"}, "task": {}},
    )
    assert_valid_legacy(created.body, "tools/call")
    task_id = created.result["task"]["taskId"]
    got = await host.request("tasks/get", {"taskId": task_id})
    assert_valid_legacy(got.body, "tasks/get")
    done = await host.request("tasks/result", {"taskId": task_id})
    assert "old" in done.result["content"][0]["text"]


async def test_a_call_without_task_asks_its_question_on_stdout_and_takes_the_answer_on_stdin(
    host: StdioHost,
) -> None:
    await host.initialize()
    reply = await host.request(
        "tools/call",
        {"name": "confirm_delete", "arguments": {"filename": "b.txt"}},
        answer=_confirm,
    )
    assert reply.result["content"][0]["text"] == "Deleted b.txt"
    (asked,) = [m for m in reply.messages if "id" in m]
    assert_valid_legacy(asked)
    assert asked["method"] == "elicitation/create"
    assert asked["id"].startswith("mcp-input:")


async def test_over_stdio_the_local_user_is_every_approver_and_is_asked_on_stdout(
    host: StdioHost,
) -> None:
    await host.initialize()

    async def decide(request: dict[str, Any]) -> dict[str, Any]:
        assert request["method"] == "elicitation/create"
        return {"action": "accept", "content": {"decision": "approve"}}

    arguments = {"message": "Go?", "approvers": ["release-manager"]}
    reply = await host.request(
        "tools/call", {"name": "request_approval", "arguments": arguments}, answer=decide
    )
    assert reply.result["content"][0]["text"] == "Decision: approved by anonymous"


async def test_cancelled_stops_the_request_and_never_its_task(host: StdioHost) -> None:
    await host.initialize()
    await host.send(
        {
            "jsonrpc": "2.0",
            "id": "doomed",
            "method": "tools/call",
            "params": {"name": "confirm_delete", "arguments": {"filename": "kept.txt"}},
        }
    )
    asked = await host.next_message()
    assert asked["method"] == "elicitation/create"
    task_id = asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
    await host.notify("notifications/cancelled", {"requestId": "doomed", "reason": "user"})
    # No response to the cancelled request ever comes: the next message answers the ping.
    pong = await host.request("ping")
    assert pong.result == {} and not pong.messages and not host.early
    waiting = await host.request("tasks/get", {"taskId": task_id})
    assert waiting.result["status"] == "input_required"
    await host.send({"jsonrpc": "2.0", "id": asked["id"], "result": ACCEPT_CONFIRM})
    done = await host.request("tasks/result", {"taskId": task_id})
    assert done.result["content"][0]["text"] == "Deleted kept.txt"


# ----- --dev: one embedded Temporal per data dir ----------------------------------------------


async def test_a_dev_server_on_a_data_dir_whose_server_answers_joins_it_and_never_stops_it(
    temporal: TemporalDevServer,
) -> None:
    assert temporal.process is not None
    other = TemporalDevServer(temporal.data_dir)
    with pytest.raises(RuntimeError, match="already serves"):
        other.start()  # starting a second server on a live one's data is refused
    await other.start_or_join(timeout_s=30)
    assert other.joined is not None and other.joined.pid == temporal.process.pid
    assert other.address == temporal.address and other.process is None
    other.stop()
    assert temporal.process.poll() is None and other.running()


async def test_joining_a_dev_server_of_another_namespace_is_refused_with_a_clear_error(
    temporal: TemporalDevServer,
) -> None:
    other = TemporalDevServer(temporal.data_dir, namespace="elsewhere")
    with pytest.raises(RuntimeError, match="serves namespace 'default', not 'elsewhere'"):
        await other.start_or_join(timeout_s=30)


def _dev_env(stdio_env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in stdio_env.items() if k != "MCP_TASKS_TEMPORAL_ADDRESS"}


def _is_temporal(pid: int) -> bool:
    try:
        return b"start-dev" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _temporal_pids(pid: int) -> list[int]:
    return [child for child in descendants(pid) if _is_temporal(child)]


async def _greets(host: StdioHost, name: str) -> None:
    reply = await host.request(
        "tools/call", {"name": "greet", "arguments": {"name": name}, "_meta": meta()}, within=90
    )
    assert reply.result["content"][0]["text"] == f"Hello, {name}!"


@pytest.mark.slow
async def test_a_second_stdio_dev_joins_the_first_ones_temporal_and_leaves_it_running(
    stdio_env: dict[str, str], tmp_path: Path
) -> None:
    data_dir, env = tmp_path / "data", _dev_env(stdio_env)
    args = ("--dev", "--data-dir", str(data_dir), "--temporal-port", str(free_port()))
    first = await ProcessHost.start(*args, env=env, log_path=tmp_path / "first.log")
    second: ProcessHost | None = None
    try:
        await _greets(first, "first")
        (temporal_pid,) = _temporal_pids(first.process.pid)
        second = await ProcessHost.start(*args, env=env, log_path=tmp_path / "second.log")
        created = await second.request(
            "tools/call",
            {"name": "slow_compute", "arguments": {"seconds": 0}, "_meta": meta(TASKS)},
            within=90,
        )
        assert _temporal_pids(second.process.pid) == []
        assert json.loads((data_dir / "temporal.json").read_text())["pid"] == temporal_pid
        assert await second.close() == 0
        assert alive(temporal_pid)
        await _greets(first, "still here")
        done = await _wait_task(first, created.result["taskId"], lambda t: t["status"] in TERMINAL)
        assert done["status"] == "completed"
        assert await first.close() == 0
        wait_gone([temporal_pid])
    finally:
        for host in (first, second):
            if host is not None:
                host.kill_tree()


@pytest.mark.slow
async def test_two_stdio_dev_started_at_once_share_one_temporal(
    stdio_env: dict[str, str], tmp_path: Path
) -> None:
    data_dir, env = tmp_path / "data", _dev_env(stdio_env)
    args = ("--dev", "--data-dir", str(data_dir), "--temporal-port", str(free_port()))
    hosts = [
        await ProcessHost.start(*args, env=env, log_path=tmp_path / f"host-{n}.log")
        for n in range(2)
    ]
    try:
        await asyncio.gather(*(_greets(host, f"host {n}") for n, host in enumerate(hosts)))
        servers = [pid for host in hosts for pid in _temporal_pids(host.process.pid)]
        assert len(servers) == 1
        assert [await host.close() for host in hosts] == [0, 0]
    finally:
        for host in hosts:
            host.kill_tree()


@pytest.mark.slow
async def test_when_the_stdio_dev_that_started_temporal_exits_the_one_that_joined_restarts_it(
    stdio_env: dict[str, str], tmp_path: Path
) -> None:
    data_dir, env = tmp_path / "data", _dev_env(stdio_env)
    args = ("--dev", "--data-dir", str(data_dir), "--temporal-port", str(free_port()))
    first = await ProcessHost.start(*args, env=env, log_path=tmp_path / "first.log")
    second: ProcessHost | None = None
    try:
        await _greets(first, "first")
        second = await ProcessHost.start(*args, env=env, log_path=tmp_path / "second.log")
        created = await second.request(
            "tools/call",
            {
                "name": "confirm_delete",
                "arguments": {"filename": "x"},
                "_meta": meta(TASKS_AND_ELICITATION),
            },
            within=90,
        )
        task_id = created.result["taskId"]
        await _wait_task(second, task_id, lambda t: t["status"] == "input_required")
        assert await first.close() == 0
        async with asyncio.timeout(60):
            while not _temporal_pids(second.process.pid):  # noqa: ASYNC110 (polling /proc)
                await asyncio.sleep(0.2)
        answered = await second.request(
            "tasks/update",
            {
                "taskId": task_id,
                "inputResponses": {"confirm": ACCEPT_CONFIRM},
                "_meta": meta(TASKS),
            },
            within=60,
        )
        assert_valid("tasks/update", answered.body)
        done = await _wait_task(second, task_id, lambda t: t["status"] in TERMINAL)
        assert done["result"]["content"][0]["text"] == "Deleted x"
        assert await second.close() == 0
    finally:
        for host in (first, second):
            if host is not None:
                host.kill_tree()
