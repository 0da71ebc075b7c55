"""Errors of the task layer, and the JSON-RPC errors the protocol layer makes of them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_server.http.app import create_app
from mcp_server.protocol.frame import errors
from mcp_server.protocol.frame.errors import from_task_error
from mcp_server.tasks.errors import (
    ArgumentsTooLarge,
    BackendRefused,
    BackendUnavailable,
    TaskError,
    TaskFailed,
    TaskNotFound,
)
from mcp_server.tools.loading import load_toolsets
from mcp_server.tools.registry import Tool, ToolRegistry
from mcp_tasks.settings import Settings
from tests.conftest import running_stack
from tests.mcp_client import NO_CAPABILITIES, McpClient

# What the server answered before the task layer had errors of its own: code, message, data,
# HTTP status and headers must stay exactly these.
MAPPINGS: list[tuple[TaskError, int, str, Any, int, dict[str, str]]] = [
    (
        TaskNotFound("mcp-task-1"),
        errors.INVALID_PARAMS,
        errors.TASK_NOT_FOUND_MESSAGE,
        None,
        400,
        {},
    ),
    (
        ArgumentsTooLarge("BlobSizeLimitError"),
        errors.INVALID_PARAMS,
        "The tool arguments are too large to store: BlobSizeLimitError",
        None,
        400,
        {},
    ),
    (
        BackendUnavailable("Temporal", "read the task: tcp connect error"),
        errors.INTERNAL_ERROR,
        "The task backend (Temporal) is unavailable: read the task: tcp connect error",
        {"retryAfterMs": 2000},
        503,
        {"Retry-After": "2"},
    ),
    (
        BackendRefused("Temporal", "start the task", "namespace not found"),
        errors.INTERNAL_ERROR,
        "Temporal refused to start the task: namespace not found",
        None,
        500,
        {},
    ),
    (
        TaskFailed(-32603, "simulated", {"why": "tests"}),
        errors.INTERNAL_ERROR,
        "simulated",
        {"why": "tests"},
        500,
        {},
    ),
    (TaskFailed(-32602, "bad input"), errors.INVALID_PARAMS, "bad input", None, 400, {}),
]


@pytest.mark.parametrize(
    ("error", "code", "message", "data", "status", "headers"),
    MAPPINGS,
    ids=[type(mapping[0]).__name__ for mapping in MAPPINGS],
)
def test_each_task_error_becomes_the_json_rpc_error_the_server_always_sent(
    error: TaskError, code: int, message: str, data: Any, status: int, headers: dict[str, str]
) -> None:
    mapped = from_task_error(error)
    assert (mapped.code, mapped.message, mapped.data) == (code, message, data)
    assert (mapped.http_status, mapped.headers) == (status, headers)


# ----- over HTTP, on real Temporal -----------------------------------------------------------


@pytest.fixture
async def sync_registry() -> ToolRegistry:
    """The conformance tools, plus two that run synchronously without the tasks extension."""
    registry = load_toolsets("conformance", ["tests.fixture_tools"])
    empty: dict[str, Any] = {"type": "object"}
    registry.add(
        Tool(
            "sync_protocol_error",
            "Fails with a JSON-RPC error.",
            empty,
            task_support="optional",
            workflow="ProtocolErrorJob",
        )
    )
    registry.add(
        Tool(
            "sync_too_slow",
            "Outlives its synchronous time.",
            empty,
            task_support="optional",
            workflow="TestsWaitForever",
            sync_timeout_s=0.5,
        )
    )
    return registry


async def test_a_synchronous_call_whose_workflow_fails_answers_with_its_json_rpc_error(
    temporal_client: Client, sync_registry: ToolRegistry
) -> None:
    async with running_stack(temporal_client, sync_registry) as stack:
        reply = await stack.mcp.call_tool("sync_protocol_error", capabilities=NO_CAPABILITIES)
    assert reply.status == 500
    assert reply.error == {
        "code": errors.INTERNAL_ERROR,
        "message": "protocol_error_job: simulated internal error",
    }


async def test_a_synchronous_call_that_outlives_its_wait_names_the_task_which_keeps_running(
    temporal_client: Client, sync_registry: ToolRegistry
) -> None:
    async with running_stack(temporal_client, sync_registry) as stack:
        reply = await stack.mcp.call_tool("sync_too_slow", capabilities=NO_CAPABILITIES)
        follow_up = reply.result["structuredContent"]
        assert reply.result["isError"] is False and follow_up["status"] == "working"
        assert follow_up["taskId"] in reply.result["content"][0]["text"]
        description = await temporal_client.get_workflow_handle(follow_up["taskId"]).describe()
        assert description.status == WorkflowExecutionStatus.RUNNING
        await temporal_client.get_workflow_handle(follow_up["taskId"]).terminate("test over")


class Relay:
    """A TCP relay to Temporal that can be cut, as a network partition would."""

    def __init__(self, address: str) -> None:
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)
        self._open: list[asyncio.StreamWriter] = []

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream = await asyncio.open_connection(self.host, self.port)
        self._open += [writer, upstream]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except OSError:
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, upstream), pipe(upstream_reader, writer))

    async def cut(self) -> None:
        self._server.close()
        for writer in self._open:
            writer.transport.abort()
        await self._server.wait_closed()


@asynccontextmanager
async def served_in_process(client: Client) -> AsyncIterator[McpClient]:
    """The app through its ASGI interface, with no worker: nothing else talks to Temporal."""
    registry = load_toolsets("conformance")
    app = create_app(Settings(task_queue=f"tests-{uuid.uuid4()}"), registry, client=client)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            yield McpClient(http, "http://127.0.0.1/mcp")


async def test_a_lookup_while_temporal_is_unreachable_is_a_503_to_retry_after_2_s(
    temporal_client: Client,
) -> None:
    relay = Relay(temporal_client.service_client.config.target_host)
    client = await Client.connect(await relay.start())
    async with served_in_process(client) as mcp:
        assert (await mcp.get_task("mcp-task-" + "0" * 32)).error["code"] == errors.INVALID_PARAMS
        await relay.cut()
        async with asyncio.timeout(30):  # the client retries for about 10 s before giving up
            reply = await mcp.get_task("mcp-task-" + "0" * 32)
    assert reply.status == 503 and reply.headers["retry-after"] == "2"
    assert reply.error["code"] == errors.INTERNAL_ERROR
    assert reply.error["data"] == {"retryAfterMs": 2000}
    assert reply.error["message"].startswith("The task backend (Temporal) is unavailable: ")
