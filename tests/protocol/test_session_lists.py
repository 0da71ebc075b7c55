"""What a 2025-11-25 session costs Temporal: nothing until it creates a task, and then a list
that ends once idle, with `initialize` itself rate-limited per principal.

Attack: 40 times (`initialize`, a GET stream held a moment, close) left 40 `McpSessionTasks`
workflows running for a day each."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import timedelta

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from mcp_server.http import sse
from mcp_server.http.handshake import SESSION_HEADER, session_digest
from mcp_server.protocol.frame.errors import RATE_LIMITED
from mcp_server.protocol.v2025 import session_stream as session_stream_module
from mcp_server.tasks import session_tasks
from mcp_server.tasks.store import TemporalTaskStore
from tests.client_2025 import Client2025
from tests.conftest import Stack, StackFactory
from tests.http.test_session_stream_limits import session_stream
from tests.time_skipping import time_skipping_env, worker_of_its_own  # noqa: F401 (fixture)
from workflows.session_tasks import (
    TASK_CREATED_SIGNAL,
    SessionTaskCreated,
    SessionTasksWorkflow,
    session_tasks_workflow_id,
)


async def test_a_session_that_creates_no_task_leaves_no_workflow(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack() as stack:
        for _ in range(3):
            client = Client2025(stack.http, stack.url)
            await client.initialize()
            session = session_digest(client.headers()[SESSION_HEADER])
            handle = stack.client.get_workflow_handle(
                session_tasks_workflow_id(stack.settings.task_queue, session)
            )
            async with session_stream(stack, client) as opened:
                assert opened.status_code == 200
                deadline = time.monotonic() + 3  # a reader that opened it would have by now
                while time.monotonic() < deadline:
                    try:
                        await handle.describe()
                    except RPCError as err:
                        assert err.status == RPCStatusCode.NOT_FOUND
                    else:
                        raise AssertionError("a stream with nothing to follow opened a list")
                    await asyncio.sleep(0.2)


async def test_initialize_is_rate_limited_per_principal(fresh_stack: StackFactory) -> None:
    async with fresh_stack(initialize_rate_per_minute=1, initialize_burst=3) as stack:
        for _ in range(3):
            await Client2025(stack.http, stack.url).initialize()
        client = Client2025(stack.http, stack.url)
        refused = await stack.http.post(
            stack.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            headers={"Accept": client.accept, "Content-Type": "application/json"},
        )
        assert refused.json()["error"]["code"] == RATE_LIMITED
        assert SESSION_HEADER not in refused.headers  # no session minted


async def test_an_idle_session_list_ends_in_minutes_not_a_day(
    time_skipping_env: WorkflowEnvironment,  # noqa: F811
) -> None:
    env = time_skipping_env
    async with worker_of_its_own(env, [SessionTasksWorkflow]) as queue:
        handle = await env.client.start_workflow(
            SessionTasksWorkflow.run,
            "session",
            id=session_tasks_workflow_id(queue, uuid.uuid4().hex),
            task_queue=queue,
            start_signal=TASK_CREATED_SIGNAL,
            start_signal_args=[SessionTaskCreated("task-1")],
        )
        await asyncio.wait_for(handle.result(), 60)
        described = await handle.describe()
    assert described.close_time is not None and described.start_time is not None
    assert described.close_time - described.start_time <= timedelta(minutes=15)


async def session_with_a_task(stack: Stack) -> tuple[str, str]:
    """A new 2025-11-25 session of the stack's principal that created one task: its digest and
    the task's id."""
    client = Client2025(stack.http, stack.url)
    await client.initialize()
    created = await client.request(
        "tools/call",
        {"name": "slow_compute", "arguments": {"seconds": 0.1, "label": "s"}, "task": {}},
    )
    return session_digest(client.headers()[SESSION_HEADER]), created.result["task"]["taskId"]


async def test_a_principal_holds_a_bounded_number_of_open_session_lists(
    fresh_stack: StackFactory,
) -> None:
    """Attack: one principal opens many sessions that each create a task, each task opening a
    list; past the bound the least recently used list closes, and no task is refused."""
    async with fresh_stack(session_lists_per_principal=2) as stack:
        sessions = [await session_with_a_task(stack) for _ in range(5)]
        statuses = []
        for session, _ in sessions:
            handle = stack.client.get_workflow_handle(
                session_tasks_workflow_id(stack.settings.task_queue, session)
            )
            statuses.append((await handle.describe()).status)
        running = WorkflowExecutionStatus.RUNNING
        assert statuses[3:] == [running, running]
        assert statuses[:3] == [WorkflowExecutionStatus.TERMINATED] * 3
        # A closed list still names its task to a stream that reads it afterwards.
        store = TemporalTaskStore(stack.client, stack.settings.task_queue)
        first_session, first_task = sessions[0]
        async with asyncio.timeout(20):
            ids, _ = await store.session_tasks(first_session, b"")
        assert ids == [first_task]


class Reads:
    """How many times each session's list was read through the store (each read is one call
    to Temporal, or one long-poll), and an event set at each session's first."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()
        self.started: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)

    async def first(self, session: str) -> None:
        """Until the session's stream has asked for its list (bounded)."""
        await asyncio.wait_for(self.started[session].wait(), 15)


@contextlib.contextmanager
def counted_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Reads]:
    reads = Reads()
    read = TemporalTaskStore.session_tasks

    async def counting(
        store: TemporalTaskStore, session: str, cursor: bytes
    ) -> tuple[list[str], bytes]:
        reads.count[session] += 1
        reads.started[session].set()
        return await read(store, session, cursor)

    monkeypatch.setattr(TemporalTaskStore, "session_tasks", counting)
    yield reads


async def test_a_task_of_this_replica_wakes_a_stream_whose_session_had_no_list(
    fresh_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Far longer than the wait below: the question can only come through the wake.
    monkeypatch.setattr(session_tasks, "ABSENT_POLL", timedelta(hours=1))
    with counted_reads(monkeypatch) as reads:
        async with fresh_stack() as stack:
            client = Client2025(stack.http, stack.url)
            await client.initialize()
            session = session_digest(client.headers()[SESSION_HEADER])
            async with asyncio.timeout(30), session_stream(stack, client) as stream:
                assert stream.status_code == 200
                await reads.first(session)  # found no list, and waits
                created = await client.request(
                    "tools/call",
                    {"name": "confirm_delete", "arguments": {"filename": "w.txt"}, "task": {}},
                )
                async for line in stream.aiter_lines():
                    if line.startswith("data: "):
                        asked = json.loads(line[len("data: ") :])
                        break
    assert asked["method"] == "elicitation/create"
    related = asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]
    assert related["taskId"] == created.result["task"]["taskId"]


async def test_an_idle_stream_asks_temporal_a_bounded_number_of_times(
    fresh_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: 200 streams of sessions with no task asked Temporal about 100 times a second
    (each every 2 s). Held for 40 keep-alives (about 8 s), an idle stream reads its list once
    (then once per `ABSENT_POLL`); every 2 s would be 4 reads or more."""
    monkeypatch.setattr(session_stream_module, "SESSION_IDLE_S", 0.2)
    monkeypatch.setattr(sse, "KEEPALIVE_S", 0.2)
    with counted_reads(monkeypatch) as reads:
        async with fresh_stack() as stack:
            client = Client2025(stack.http, stack.url)
            await client.initialize()
            session = session_digest(client.headers()[SESSION_HEADER])
            other = [await session_with_a_task(stack) for _ in range(3)]  # woken: not ours
            keepalives = 0
            async with asyncio.timeout(60), session_stream(stack, client) as stream:
                assert stream.status_code == 200
                async for line in stream.aiter_lines():
                    if line.startswith(":"):
                        keepalives += 1
                        if keepalives == 20:  # halfway: other sessions' tasks wake no one here
                            other += [await session_with_a_task(stack) for _ in range(3)]
                        if keepalives == 40:
                            break
                    assert not line.startswith("data: ")
    assert 1 <= reads.count[session] <= 2
