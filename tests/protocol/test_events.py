"""Client-subscribed events (SEP-3415, webhook mode) on real Temporal, a real worker and a real
https receiver on 127.0.0.1 with a self-signed certificate (tests/event_receiver.py) that
verifies every POST with the `standardwebhooks` package. Why a real stack: a subscription is a
workflow, the handshake and every delivery are activities, the events come from task workflows;
the in-memory tier has none of them (it does not offer the extension)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from activities.callback_http import CallbackError, resolved_address
from mcp_server.protocol.events.models import EVENTS_EXTENSION
from mcp_server.protocol.frame.errors import CALLBACK_ENDPOINT_ERROR, INVALID_PARAMS, QUOTA_EXCEEDED
from mcp_server.runtime.devserver import free_port
from mcp_server.runtime.tokens import add_token
from mcp_server.tasks.event_subscriptions import events_offered
from mcp_tasks.settings import Settings
from mcp_tasks.webhooks.callback_url import address_allowed, callback_url_problem
from tests.conftest import Stack, StackFactory
from tests.event_receiver import EventReceiver, new_secret, self_signed
from tests.mcp_client import McpClient, Reply
from tests.workflows.test_task_state import replay
from workflows.delivery import EventDeliveryWorkflow
from workflows.event_subscriptions import EventSubscriptionsWorkflow

APPROVE = {"decision": {"action": "accept", "content": {"decision": "approve"}}}
# Recorded runs of the subscriptions and delivery workflows (the task side's is under
# tests/histories/events/, replayed with the other task histories by test_task_state.py).
EVENT_HISTORIES = Path(__file__).parents[1] / "event_histories"
EVERY_EVENT = ["task.input_required", "task.completed", "task.failed", "task.cancelled"]


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed(tmp_path)


@pytest.fixture
def alice_hook(certificate: tuple[Path, Path]) -> Iterator[EventReceiver]:
    receiver = EventReceiver(free_port(), certificate, new_secret())
    receiver.start()
    yield receiver
    receiver.stop()


@pytest.fixture
def bob_hook(certificate: tuple[Path, Path]) -> Iterator[EventReceiver]:
    receiver = EventReceiver(free_port(), certificate, new_secret())
    receiver.start()
    yield receiver
    receiver.stop()


@asynccontextmanager
async def events_stack(
    fresh_stack: StackFactory, tmp_path: Path, certificate: tuple[Path, Path], **settings: Any
) -> AsyncIterator[tuple[Stack, McpClient, McpClient]]:
    """A stack with token authentication (webhooks need a principal), private addresses
    allowed (the receiver is on 127.0.0.1) and the receiver's certificate trusted; two callers."""
    tokens = tmp_path / "tokens.json"
    alice, bob = add_token(tokens, "alice", []), add_token(tokens, "bob", [])
    overrides = {
        "auth": "tokens",
        "tokens_file": str(tokens),
        "events_allow_private_addresses": True,
        "events_ca_file": str(certificate[0]),
        "events_max_subscriptions": 20,
        **settings,
    }
    async with fresh_stack(**overrides) as stack:
        callers = []
        for token in (alice, bob):
            caller = McpClient(stack.http, stack.url)
            caller.extra_headers = {"Authorization": f"Bearer {token}"}
            callers.append(caller)
        yield stack, callers[0], callers[1]


async def subscribe(
    caller: McpClient,
    hook: EventReceiver,
    name: str,
    arguments: dict[str, Any] | None = None,
    **extra: Any,
) -> Reply:
    delivery = {"mode": "webhook", "url": hook.url, "secret": hook.secret}
    params = {"name": name, "arguments": arguments or {}, "delivery": delivery, **extra}
    return await caller.rpc("events/subscribe", params)


async def subscribed(caller: McpClient, hook: EventReceiver, name: str, **extra: Any) -> str:
    reply = await subscribe(caller, hook, name, **extra)
    assert "result" in reply.body, reply.body
    return str(reply.body["result"]["id"])


async def test_a_subscribed_client_hears_each_event_of_its_own_tasks_and_none_of_anothers(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],
    alice_hook: EventReceiver,
    bob_hook: EventReceiver,
) -> None:
    async with events_stack(fresh_stack, tmp_path, certificate) as (_, alice, bob):
        discovered = (await alice.rpc("server/discover")).result
        assert EVENTS_EXTENSION in discovered["capabilities"]["extensions"]
        listed = (await alice.rpc("events/list")).result["events"]
        assert sorted(e["name"] for e in listed) == sorted(EVERY_EVENT)
        assert {tuple(e["delivery"]) for e in listed} == {("webhook",)}
        ids = {name: await subscribed(alice, alice_hook, name) for name in EVERY_EVENT}
        assert len(alice_hook.handshakes) == 1  # verified once per (principal, URL)
        for name in EVERY_EVENT:
            await subscribed(bob, bob_hook, name)
        asked = await alice.create_task("request_approval", {"message": "Ship 1.2?"})
        await alice_hook.wait_for(lambda r: r.names() == ["task.input_required"], 15, "asked")
        assert "error" not in (await alice.update_task(asked, APPROVE)).body
        failing = await alice.create_task("protocol_error_job")
        slow = await alice.create_task("slow_compute", {"seconds": 60})
        await alice.wait_status(slow, "working")
        await alice.cancel_task(slow)
        await alice_hook.wait_for(lambda r: len(r.unique()) == 4, 20, "every event")
        by_name = {e.body["name"]: e for e in alice_hook.unique().values()}
        assert sorted(by_name) == sorted(EVERY_EVENT)
        assert by_name["task.input_required"].body["data"]["taskId"] == asked
        assert by_name["task.completed"].body["data"]["taskId"] == asked
        assert by_name["task.failed"].body["data"]["taskId"] == failing
        assert by_name["task.cancelled"].body["data"]["taskId"] == slow
        for name, event in by_name.items():
            assert event.subscription_id == ids[name]  # X-MCP-Subscription-Id
            assert event.webhook_id == event.body["eventId"]
            assert isinstance(event.body["data"]["sequence"], int)
        first, last = by_name["task.input_required"], by_name["task.completed"]
        assert first.body["data"]["sequence"] < last.body["data"]["sequence"]
        assert first.body["data"]["inputRequests"][0]["message"] == "Ship 1.2?"
        assert not alice_hook.refused
        # Bob's own task reaches his receiver: so by now alice's would have, had it leaked.
        bobs = await bob.create_task("slow_compute", {"seconds": 60})
        await bob.wait_status(bobs, "working")
        await bob.cancel_task(bobs)
        await bob_hook.wait_for(lambda r: len(r.unique()) == 1, 15, "bob's own event")
        assert [e.body["data"]["taskId"] for e in bob_hook.unique().values()] == [bobs]
        assert all(e.body["data"]["taskId"] != bobs for e in alice_hook.unique().values())


async def test_the_handshake_refuses_an_endpoint_that_does_not_echo_the_challenge(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],
    alice_hook: EventReceiver,
) -> None:
    alice_hook.confirm = False
    async with events_stack(fresh_stack, tmp_path, certificate) as (_, alice, _bob):
        reply = await subscribe(alice, alice_hook, "task.input_required")
        assert reply.body["error"]["code"] == CALLBACK_ENDPOINT_ERROR
        assert reply.body["error"]["data"] == {"reason": "challenge_failed"}
        assert len(alice_hook.handshakes) == 1
        again = await subscribe(alice, alice_hook, "task.completed")  # the same URL, at once
        assert again.body["error"]["data"] == {"reason": "challenge_failed"}
        assert len(alice_hook.handshakes) == 1  # answered without another POST to it
        task_id = await alice.create_task("request_approval", {"message": "Heard?"})
        await alice.wait_status(task_id, "input_required")
        # A subscription that would hear it, to a receiver that confirms (another URL of the
        # same receiver): it hears it, the refused one never existed.
        alice_hook.confirm = True
        alice_hook.url += "/confirmed"
        await subscribed(alice, alice_hook, "task.cancelled")
        await alice.cancel_task(task_id)
        await alice_hook.wait_for(lambda r: len(r.unique()) == 1, 15, "the cancellation")
        assert alice_hook.names() == ["task.cancelled"]


async def test_an_expired_subscription_delivers_nothing(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],
    alice_hook: EventReceiver,
    bob_hook: EventReceiver,
    temporal_client: Client,
) -> None:
    async with events_stack(fresh_stack, tmp_path, certificate, events_min_ttl_s=1) as (
        _,
        alice,
        _bob,
    ):
        bob_hook.secret = alice_hook.secret  # a second receiver of alice's (its own URL)
        short = await subscribed(alice, alice_hook, "task.input_required", ttlMs=1000)
        await subscribed(alice, bob_hook, "task.input_required", ttlMs=600_000)
        reply = await subscribe(alice, alice_hook, "task.cancelled", ttlMs=1000)
        refresh_before = reply.body["result"]["refreshBefore"]
        deadline = time.monotonic() + 10
        while time.time() < _unix(refresh_before) + 0.5:  # past the grant, by this clock
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        task_id = await alice.create_task("request_approval", {"message": "Anyone?"})
        await bob_hook.wait_for(lambda r: len(r.unique()) == 1, 15, "the live one")
        (event,) = bob_hook.unique().values()
        # The expired subscription started no delivery for the very same event.
        expired_delivery = temporal_client.get_workflow_handle(f"{short}.{event.webhook_id}")
        with pytest.raises(RPCError) as raised:
            await expired_delivery.describe()
        assert raised.value.status == RPCStatusCode.NOT_FOUND
        await alice.cancel_task(task_id)
        assert not alice_hook.unique()


async def test_a_410_stops_the_delivery_and_keeps_the_subscription(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],
    alice_hook: EventReceiver,
    temporal_client: Client,
) -> None:
    alice_hook.status = 410
    async with events_stack(fresh_stack, tmp_path, certificate) as (_, alice, _bob):
        sub = await subscribed(alice, alice_hook, "task.input_required")
        task_id = await alice.create_task("request_approval", {"message": "Gone?"})
        await alice_hook.wait_for(lambda r: len(r.events) == 1, 15, "the delivery")
        handle = temporal_client.get_workflow_handle(f"{sub}.{alice_hook.events[0].webhook_id}")
        assert await asyncio.wait_for(handle.result(), 15) == {"outcome": "gone"}
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
        assert len(alice_hook.events) == 1  # never tried again
        refreshed = (await subscribe(alice, alice_hook, "task.input_required")).body["result"]
        assert refreshed["id"] == sub and refreshed["deliveryStatus"]["active"] is True
        await alice.cancel_task(task_id)


async def test_a_delivery_still_retrying_stops_once_its_subscription_is_gone(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],
    alice_hook: EventReceiver,
    temporal_client: Client,
) -> None:
    alice_hook.status = 503
    async with events_stack(fresh_stack, tmp_path, certificate) as (_, alice, _bob):
        sub = await subscribed(alice, alice_hook, "task.input_required")
        task_id = await alice.create_task("request_approval", {"message": "Still there?"})
        await alice_hook.wait_for(lambda r: len(r.events) >= 1, 15, "a failed attempt")
        target = {"url": alice_hook.url}
        gone = {"name": "task.input_required", "arguments": {}, "delivery": target}
        assert "result" in (await alice.rpc("events/unsubscribe", gone)).body
        alice_hook.status = 200  # the next attempt would be delivered, if there were one
        handle = temporal_client.get_workflow_handle(f"{sub}.{alice_hook.events[0].webhook_id}")
        assert await asyncio.wait_for(handle.result(), 30) == {"outcome": "ended"}
        await alice.cancel_task(task_id)


async def test_bad_subscriptions_are_refused_with_their_codes(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],
    alice_hook: EventReceiver,
) -> None:
    async with events_stack(fresh_stack, tmp_path, certificate, events_max_subscriptions=2) as (
        _,
        alice,
        bob,
    ):
        await subscribed(alice, alice_hook, "task.completed")
        http = {"mode": "webhook", "url": "http://127.0.0.1:1/x", "secret": alice_hook.secret}
        cases = [
            ({"name": "task.nope", "delivery": {**http, "url": alice_hook.url}}, "event"),
            ({"name": "task.completed", "delivery": http}, None),
            (
                {
                    "name": "task.completed",
                    "delivery": {**http, "url": alice_hook.url, "secret": "whsec_c2hvcnQ="},
                },
                None,
            ),
            (
                {
                    "name": "task.completed",
                    "arguments": {"color": "red"},
                    "delivery": {**http, "url": alice_hook.url},
                },
                None,
            ),
        ]
        for params, kind in cases:
            error = (await alice.rpc("events/subscribe", params)).body["error"]
            assert error["code"] == INVALID_PARAMS, params
            assert kind is None or error["data"]["kind"] == kind
            assert alice_hook.secret not in str(error)
        bobs = await bob.create_task("slow_compute", {"seconds": 60})
        foreign = await subscribe(alice, alice_hook, "task.completed", {"taskId": bobs})
        mine = await subscribe(bob, alice_hook, "task.completed", {"taskId": "mcp-task-none"})
        # Another's task is "not found" exactly as a task that never existed, as tasks/get says.
        assert foreign.body["error"] == mine.body["error"]
        assert foreign.body["error"]["code"] == INVALID_PARAMS
        await bob.cancel_task(bobs)
        # Bob holds no subscription (no workflow to signal): his task ends as any other.
        assert (await bob.wait_terminal(bobs))["status"] == "cancelled"
        await subscribed(alice, alice_hook, "task.failed")
        over = await subscribe(alice, alice_hook, "task.cancelled")
        assert over.body["error"]["code"] == QUOTA_EXCEEDED
        assert over.body["error"]["data"] == {"limit": "subscriptions", "max": 2}
        target = {"url": alice_hook.url}
        gone = {"name": "task.cancelled", "arguments": {}, "delivery": target}
        missing = (await alice.rpc("events/unsubscribe", gone)).body["error"]
        assert missing["code"] == INVALID_PARAMS and missing["data"] == {"kind": "subscription"}
        done = {"name": "task.failed", "arguments": {}, "delivery": target}
        unsubscribed = (await alice.rpc("events/unsubscribe", done)).body["result"]
        assert unsubscribed["resultType"] == "complete"
        assert "result" in (await subscribe(alice, alice_hook, "task.cancelled")).body


async def test_without_authentication_the_extension_is_not_offered(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(events_max_subscriptions=20) as stack:  # turned on, auth none
        discovered = (await stack.mcp.rpc("server/discover")).result
        assert EVENTS_EXTENSION not in discovered["capabilities"]["extensions"]
        assert (await stack.mcp.rpc("events/list")).body["error"]["code"] == -32601


def test_callback_urls_are_https_without_credentials() -> None:
    assert callback_url_problem("https://hooks.example.com/a?b=1") is None
    assert (
        callback_url_problem("http://hooks.example.com/") == "must be an https:// URL with a host"
    )
    assert callback_url_problem("https://u:p@hooks.example.com/") is not None
    assert callback_url_problem("https://hooks.example.com/#x") is not None


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "::1",
        "fc00::1",
        "fe80::1",
        "0.0.0.0",
        "::ffff:127.0.0.1",
        "100.64.0.1",
        "224.0.0.1",
        # IPv6 forms that embed a private IPv4 address: compatible, SIIT, NAT64 (both
        # prefixes), 6to4, Teredo (its client inverted), and deprecated site-local.
        "::7f00:1",
        "::a9fe:a9fe",
        "::ffff:0:7f00:1",
        "64:ff9b::7f00:1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::a00:1",
        "2002:7f00:1::1",
        "2002:a9fe:a9fe::1",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
        "fec0::1",
        "fec0::7f00:1",
    ],
)
def test_a_non_global_address_is_never_called_unless_the_operator_allows_it(address: str) -> None:
    assert not address_allowed(address, allow_private=False)
    assert address_allowed("93.184.216.34", allow_private=False)


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1", "2606:4700::1111"])
def test_an_ipv6_address_embedding_a_global_ipv4_address_may_be_called(address: str) -> None:
    assert address_allowed(address, allow_private=False)


async def test_a_name_that_resolves_to_loopback_is_refused_at_delivery_time() -> None:
    with pytest.raises(CallbackError) as raised:
        await resolved_address("localhost", 443, allow_private=False)
    assert raised.value.category == "connection_refused"
    assert await resolved_address("localhost", 443, allow_private=True) in ("127.0.0.1", "::1")


def _unix(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize("history", sorted(EVENT_HISTORIES.glob("*.json")), ids=lambda p: p.stem)
async def test_every_recorded_event_workflow_history_replays_with_todays_workflows(
    history: Path,
) -> None:
    """A subscription may live a day and a delivery retry as long: a change to either workflow
    that would strand a running one fails here, naming the history."""
    result = await replay(history, [EventSubscriptionsWorkflow, EventDeliveryWorkflow])
    assert result.replay_failure is None


def test_the_extension_is_off_until_an_operator_turns_it_on(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    add_token(tokens, "alice", [])
    authenticated = Settings(auth="tokens", tokens_file=str(tokens))
    assert not events_offered(authenticated)  # the default: 0 subscriptions
    assert events_offered(authenticated.with_(events_max_subscriptions=20))
    assert not events_offered(Settings(events_max_subscriptions=20))  # no authentication
