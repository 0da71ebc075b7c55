"""What one principal's events may cost the worker and Temporal, on Temporal's time-skipping
server with same-named fakes of the delivery activity (tests/time_skipping.py): a receiver
that answers 503 forever is tried a bounded number of times over a bounded time, a
subscription whose deliveries keep failing is suspended, and a principal's deliveries in
flight are bounded.

Attacks: before, one subscription to a receiver answering 503 retried every event for a day,
with no bound on how many deliveries of one principal ran at once."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import Worker

from activities.callback_http import CallbackPolicy
from activities.delivery import DeliverySender
from activities.event_handshake import DESTINATION_BURST, EndpointHandshakes
from mcp_server.runtime.devserver import free_port
from mcp_tasks.contracts.events import (
    DELIVER_ACTIVITY,
    HANDSHAKE_LIMITED,
    SUBSCRIPTION_QUERY,
    TASK_EVENT_SIGNAL,
    EventDelivery,
    Liveness,
    Subscription,
    SubscriptionsInput,
    TaskEvent,
    VerifyInput,
)
from mcp_tasks.contracts.webhooks import REJECTED_ERROR
from tests.time_skipping import time_skipping_env, worker_of_its_own  # noqa: F401 (fixture)
from workflows.delivery import EventDeliveryWorkflow
from workflows.event_subscriptions import EventSubscriptionsWorkflow


class Receiver:
    """A fake delivery activity: every attempt is counted, and answered as the test says."""

    def __init__(self, refuse: bool = False, hold: bool = False) -> None:
        self.attempts: list[str] = []
        self.refuse = refuse
        self.release = asyncio.Event()
        if not hold:
            self.release.set()

    @activity.defn(name=DELIVER_ACTIVITY)
    async def deliver(self, delivery: EventDelivery) -> dict[str, Any]:
        self.attempts.append(delivery.event_id)
        await self.release.wait()
        if self.refuse:
            raise ApplicationError("refused", "http_4xx", type=REJECTED_ERROR, non_retryable=True)
        raise ApplicationError("HTTP 503", "http_5xx")


def _delivery() -> EventDelivery:
    return EventDelivery(
        "mcp-events-none",
        "sub_x",
        "t.input_required.1",
        "task.input_required",
        "2026-12-06T00:00:00.000Z",
        {"taskId": "t"},
    )


async def test_a_receiver_that_answers_503_forever_is_tried_a_few_times_within_minutes(
    time_skipping_env: WorkflowEnvironment,  # noqa: F811
) -> None:
    receiver = Receiver()
    env = time_skipping_env
    async with worker_of_its_own(env, [EventDeliveryWorkflow], [receiver.deliver]) as queue:
        started = await env.client.start_workflow(
            EventDeliveryWorkflow.run,
            _delivery(),
            id=f"delivery-{uuid.uuid4()}",
            task_queue=queue,
        )
        outcome = await asyncio.wait_for(started.result(), 60)
        description = await started.describe()
    assert outcome == {"outcome": "failed", "reason": "http_5xx"}
    assert 3 <= len(receiver.attempts) <= 5  # the draft: 3 to 5 attempts
    assert description.close_time is not None and description.start_time is not None
    spent = description.close_time - description.start_time
    assert spent <= timedelta(minutes=15)  # the draft: over 10 to 15 minutes (virtual time)


@contextlib.asynccontextmanager
async def on_real_time(
    client: Client, workflows: Sequence[type], activities: Sequence[Callable[..., Any]]
) -> AsyncIterator[str]:
    """A worker on a fresh queue of the dev server (real time: a subscription's expiry timer
    must not be skipped to)."""
    queue = f"test-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=workflows, activities=activities):
        yield queue


def _subscription(key: str) -> Subscription:
    expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return Subscription(
        key, "task.input_required", {}, "https://hooks.example/x", ["whsec_" + "A" * 32], expires
    )


def _event(n: int) -> TaskEvent:
    return TaskEvent(
        f"task-{n}",
        "tool",
        "input_required",
        "2026-12-06T00:00:00.000Z",
        n,
        {"taskId": f"task-{n}"},
    )


async def _children(client: Client, handle: WorkflowHandle[Any, Any]) -> int:
    return len((await handle.describe()).raw_description.pending_children)


STARTED = EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
COMPLETED = EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED


async def _history_count(handle: WorkflowHandle[Any, Any], kind: EventType.ValueType) -> int:
    return sum([e.event_type == kind async for e in handle.fetch_history_events()])


async def _signalled(handle: WorkflowHandle[Any, Any], numbers: Iterable[int], key: str) -> None:
    for n in numbers:
        await handle.signal(TASK_EVENT_SIGNAL, _event(n))
    # A query is answered once the signals before it are handled.
    await handle.query(SUBSCRIPTION_QUERY, key, result_type=Liveness)


async def test_a_subscription_whose_deliveries_keep_failing_is_suspended(
    temporal_client: Client,
) -> None:
    receiver = Receiver(refuse=True)
    key = f"sub_{uuid.uuid4().hex}"
    workflows = [EventSubscriptionsWorkflow, EventDeliveryWorkflow]
    async with on_real_time(temporal_client, workflows, [receiver.deliver]) as queue:
        handle = await temporal_client.start_workflow(
            EventSubscriptionsWorkflow.run,
            SubscriptionsInput("alice", [_subscription(key)]),
            id=f"mcp-events-{queue}-alice",
            task_queue=queue,
        )
        for n in range(3):  # three failed deliveries, one after the other
            await _signalled(handle, [n], key)
            deadline = time.monotonic() + 20
            while len(receiver.attempts) < n + 1:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            while await _history_count(handle, COMPLETED) < n + 1:  # its outcome recorded
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
        await _signalled(handle, [3, 4, 5], key)
        await asyncio.sleep(0)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:  # nothing more may start
            assert len(receiver.attempts) == 3, receiver.attempts
            assert await _history_count(handle, STARTED) == 3
            await asyncio.sleep(0.2)
        listed = await handle.query("mcp.subscriptions", result_type=list)
        assert listed[0]["deliveryStatus"]["active"] is False
        assert listed[0]["deliveryStatus"]["lastError"] == "http_4xx"
        await handle.terminate()


async def test_a_principals_deliveries_in_flight_are_bounded(
    temporal_client: Client,
) -> None:
    receiver = Receiver(hold=True)
    key = f"sub_{uuid.uuid4().hex}"
    workflows = [EventSubscriptionsWorkflow, EventDeliveryWorkflow]
    async with on_real_time(temporal_client, workflows, [receiver.deliver]) as queue:
        handle = await temporal_client.start_workflow(
            EventSubscriptionsWorkflow.run,
            SubscriptionsInput("alice", [_subscription(key)], max_in_flight=2),
            id=f"mcp-events-{queue}-alice",
            task_queue=queue,
        )
        await _signalled(handle, range(6), key)
        deadline = time.monotonic() + 20
        while await _children(temporal_client, handle) < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        assert await _children(temporal_client, handle) == 2
        listed = await handle.query("mcp.subscriptions", result_type=list)
        assert listed[0]["deliveryStatus"]["droppedEvents"] == 4
        receiver.release.set()
        await handle.terminate()


async def test_a_worker_sends_few_handshakes_to_one_address_whoever_asks() -> None:
    handshakes = EndpointHandshakes(CallbackPolicy(allow_private=True))
    port = free_port()  # nothing listens: each handshake fails at once, as a probe's would
    answers = [
        await ActivityEnvironment().run(
            handshakes.verify_endpoint,
            VerifyInput(f"sub_{n}", f"https://127.0.0.1:{port}/?p={n}", "whsec_" + "A" * 32, "c"),
        )
        for n in range(DESTINATION_BURST + 2)
    ]
    assert answers[:DESTINATION_BURST] == ["connection_refused"] * DESTINATION_BURST
    assert answers[DESTINATION_BURST:] == [HANDSHAKE_LIMITED] * 2


async def test_a_failed_attempt_is_one_warning_line_and_a_benign_error(
    temporal_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    key, port = f"sub_{uuid.uuid4().hex}", free_port()  # nothing listens there
    subscription = dataclasses.replace(_subscription(key), url=f"https://127.0.0.1:{port}/hook")
    async with on_real_time(temporal_client, [EventSubscriptionsWorkflow], []) as queue:
        handle = await temporal_client.start_workflow(
            EventSubscriptionsWorkflow.run,
            SubscriptionsInput("alice", [subscription]),
            id=f"mcp-events-{queue}-alice",
            task_queue=queue,
        )
        delivery = dataclasses.replace(
            _delivery(), subscriptions_workflow=handle.id, subscription_id=key
        )
        sender = DeliverySender(policy=CallbackPolicy(allow_private=True))
        with caplog.at_level(logging.DEBUG), pytest.raises(ApplicationError) as failed:
            await ActivityEnvironment(client=temporal_client).run(sender.deliver_event, delivery)
        await handle.terminate()
    assert failed.value.category == ApplicationErrorCategory.BENIGN  # the SDK logs it at DEBUG
    assert failed.value.details == ("connection_refused",)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert f"subscription {key} failed: connection_refused" in warnings[0].getMessage()
    assert str(port) not in warnings[0].getMessage()  # never the URL
