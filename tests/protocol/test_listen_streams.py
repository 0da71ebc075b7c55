"""subscriptions/listen at scale: one watcher per task shared by every stream, no cost while
nothing changes, and every limit a clear error (streams per caller and per replica, task ids
per stream, watched tasks, the poll budget)."""

from __future__ import annotations

import asyncio
import gc

from starlette.datastructures import Headers
from temporalio.client import Client

from mcp_server.protocol.frame import errors
from mcp_server.protocol.frame.models import ListenParams, parse_params
from mcp_server.protocol.services import build_services
from mcp_server.protocol.v2026.request_context import context_2026
from mcp_server.protocol.v2026.subscriptions import KEEPALIVE_S, listen
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings
from tests.conftest import StackFactory
from tests.fakes.clock import ManualTimer
from tests.listen_stream import ListenStream, counted_stack, eventually, is_final, task_status
from tests.mcp_client import McpClient


async def parked_approval(mcp: McpClient, message: str) -> str:
    task_id = await mcp.create_task("request_approval", {"message": message})
    await mcp.wait_status(task_id, "input_required", within=10)
    return task_id


async def keepalive_after_advancing(stream: ListenStream, timer: ManualTimer) -> None:
    """Move the stream's time by KEEPALIVE_S: a keep-alive comment comes."""
    heard = stream.comments
    timer.advance(KEEPALIVE_S)
    await eventually(lambda: stream.comments > heard)


async def listen_refusal(mcp: McpClient, notifications: dict[str, object]) -> dict[str, object]:
    reply = await mcp.rpc("subscriptions/listen", {"notifications": notifications})
    assert reply.status == 429 and reply.headers["Retry-After"].isdigit(), reply
    return reply.error


async def test_two_streams_on_one_task_share_one_watcher_and_both_hear_the_cancel(
    temporal_client: Client, registry: ToolRegistry
) -> None:
    async with counted_stack(temporal_client, registry) as (mcp, services, _):
        watchers = services.listening.watchers
        task_id = await parked_approval(mcp, "Shared?")
        async with (
            ListenStream(mcp, {"taskIds": [task_id]}) as first,
            ListenStream(mcp, {"taskIds": [task_id]}) as second,
        ):
            for stream in (first, second):
                await stream.next(task_status("input_required"))
            assert len(watchers) == 1
            await mcp.cancel_task(task_id)
            for stream in (first, second):
                cancelled = await stream.next(task_status("cancelled"))
                assert "inputRequests" not in cancelled["params"]
                await stream.next(is_final)
            await eventually(lambda: len(watchers) == 0)


async def test_a_stream_on_a_parked_task_costs_no_reads_while_it_stays_open(
    temporal_client: Client, registry: ToolRegistry
) -> None:
    async with counted_stack(temporal_client, registry) as (mcp, services, store):
        # The stream's time (its keep-alives, its deadline) is the test's to move.
        timer = services.listening.watchers.timer = ManualTimer()
        task_id = await parked_approval(mcp, "Idle?")
        async with ListenStream(mcp, {"taskIds": [task_id]}) as stream:
            await stream.next(task_status("input_required"))
            # The watcher has read the history once and waits in its second long-poll.
            await eventually(lambda: store.long_polls >= 2)
            reads, polls = store.gets, store.long_polls
            # A minute of the stream's time: a keep-alive every KEEPALIVE_S, and not one read.
            for _ in range(4):
                await keepalive_after_advancing(stream, timer)
            assert (store.gets, store.long_polls) == (reads, polls)
            # ... and it still hears the next change.
            approve = {"action": "accept", "content": {"decision": "approve"}}
            await mcp.update_task(task_id, {"decision": approve})
            done = await stream.next(task_status("completed"))
            assert done["params"]["result"]["structuredContent"]["decision"] == "approved"
        await eventually(lambda: len(services.listening.watchers) == 0)


async def test_streams_per_caller_and_task_ids_per_stream_are_limited(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(max_listen_streams_per_principal=1, max_listen_task_ids=2) as stack:
        mcp = stack.mcp
        too_many = await mcp.rpc("subscriptions/listen", {"notifications": {"taskIds": ["a"] * 3}})
        assert too_many.error["code"] == errors.INVALID_PARAMS
        assert "at most 2" in too_many.error["message"]
        async with ListenStream(mcp, {"toolsListChanged": True}):
            refused = await listen_refusal(mcp, {"toolsListChanged": True})
            assert refused["code"] == errors.QUOTA_EXCEEDED
            assert "per caller is 1" in str(refused["message"])
            assert refused["data"] == {"openStreams": 1, "limit": 1}
        # Closing the stream frees its slot (once the server has seen the client go).
        for _ in range(100):
            try:
                async with ListenStream(mcp, {"toolsListChanged": True}):
                    break
            except AssertionError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("the closed stream's slot was never freed")


async def test_streams_and_watched_tasks_per_replica_are_limited(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(max_listen_streams=2, max_watched_tasks=1) as stack:
        mcp = stack.mcp
        watched = await mcp.create_task("request_approval", {"message": "Watched?"})
        other = await mcp.create_task("request_approval", {"message": "Other?"})
        async with ListenStream(mcp, {"taskIds": [watched]}):
            refused = await listen_refusal(mcp, {"taskIds": [other]})
            assert refused["code"] == errors.QUOTA_EXCEEDED
            assert "may watch at most 1" in str(refused["message"])
            async with ListenStream(mcp, {"taskIds": [watched]}):  # shares the one watcher
                full = await listen_refusal(mcp, {"toolsListChanged": True})
                assert full["code"] == errors.QUOTA_EXCEEDED
                assert full["data"] == {"openStreams": 2, "limit": 2}


async def test_opening_a_stream_spends_the_poll_budget_of_its_tasks(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(poll_burst=1, poll_rate_factor=1) as stack:
        mcp = stack.mcp
        task_id = await mcp.create_task("request_approval", {"message": "Budget?"})
        assert (await mcp.get_task(task_id)).status == 200  # the one read of the burst
        refused = await mcp.rpc("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
        assert refused.status == 429 and refused.headers["Retry-After"].isdigit()
        assert refused.error["code"] == errors.RATE_LIMITED
        assert "subscriptions/listen" in refused.error["message"]
        assert refused.error["data"]["retryAfterMs"] > 0


async def test_a_stream_dropped_before_its_first_message_frees_its_slot(
    temporal_client: Client, registry: ToolRegistry
) -> None:
    # A client that goes away before the response starts: its messages are never iterated.
    store = TemporalTaskStore(temporal_client, "unused")
    services = build_services(Settings(), registry, store, b"s" * 32)
    ctx = context_2026("listen-1", "subscriptions/listen", "p", Headers())
    params = parse_params(ListenParams, {"notifications": {"toolsListChanged": True}})
    messages = await listen(ctx, services, params)
    assert services.listening.slots.open_for("p") == 1
    del messages
    gc.collect()
    assert services.listening.slots.total == 0
