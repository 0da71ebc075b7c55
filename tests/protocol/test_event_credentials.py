"""Event subscriptions end with the credential that made them, and a principal (and an operator)
can see and remove them: on real Temporal, a real worker and real https receivers
(tests/event_receiver.py), as in tests/protocol/test_events.py.

Attacks: a second token of alice subscribes a receiver, then is revoked (`mcp-tasks token
revoke` edits the file); before, that receiver kept hearing every question of alice's tasks,
including those her other token created later, for the subscription's whole lifetime."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_server.auth.authenticators import token_hash
from mcp_server.protocol.frame.errors import CALLBACK_ENDPOINT_ERROR, INVALID_PARAMS, RATE_LIMITED
from mcp_server.runtime.cli import _parser
from mcp_server.runtime.operator_events import subscriptions_command
from mcp_server.runtime.tokens import ID_LENGTH, add_token, revoke_tokens
from mcp_server.tasks.store import new_task_id
from mcp_tasks.contracts.events import (
    SUBSCRIBE_UPDATE,
    SubscribeInput,
    SubscribeResult,
    SubscriptionsInput,
)
from mcp_tasks.contracts.task_state import iso_timestamp
from tests.auth.test_jwks_refresh import authenticator, bearer, endpoint, key  # noqa: F401
from tests.conftest import StackFactory
from tests.event_receiver import EventReceiver
from tests.jwks_server import JwksServer
from tests.mcp_client import McpClient
from tests.protocol.test_echoes_and_escapes import Handshakes
from tests.protocol.test_events import (  # noqa: F401 (fixtures)
    alice_hook,
    bob_hook,
    certificate,
    events_stack,
    subscribe,
    subscribed,
)
from workflows.event_subscriptions import HANDSHAKES_PER_DESTINATION, EventSubscriptionsWorkflow


async def subscriptions(caller: McpClient) -> list[dict[str, Any]]:
    reply = await caller.rpc("events/subscriptions/list")
    assert "result" in reply.body, reply.body
    found: list[dict[str, Any]] = reply.body["result"]["subscriptions"]
    return found


async def test_a_revoked_tokens_subscription_hears_nothing_of_tasks_created_later(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],  # noqa: F811
    alice_hook: EventReceiver,  # noqa: F811
    bob_hook: EventReceiver,  # noqa: F811
) -> None:
    async with events_stack(fresh_stack, tmp_path, certificate) as (stack, alice, _bob):
        tokens = tmp_path / "tokens.json"
        second = add_token(tokens, "alice", [])
        stolen = McpClient(stack.http, stack.url)
        stolen.extra_headers = {"Authorization": f"Bearer {second}"}
        await subscribed(stolen, alice_hook, "task.input_required")
        bob_hook.secret = alice_hook.secret  # alice's own second receiver, her first token's
        await subscribed(alice, bob_hook, "task.input_required")
        revoke_tokens(tokens, token_hash(second)[:ID_LENGTH])
        assert (await stolen.rpc("events/list")).status == 401
        # What a revoked token set up ends with it: the server sees the revocation when it
        # reads the file again, and a listing of alice's shows only her other token's.
        deadline = time.monotonic() + 10
        while len(listed := await subscriptions(alice)) != 1:
            assert time.monotonic() < deadline, listed
            await asyncio.sleep(0.2)
        assert [s["delivery"]["url"] for s in listed] == [bob_hook.url]
        task_id = await alice.create_task("request_approval", {"message": "Heard by whom?"})
        await bob_hook.wait_for(lambda r: len(r.unique()) == 1, 15, "the live one")
        assert not alice_hook.unique()  # the revoked token's receiver heard nothing
        await alice.cancel_task(task_id)


async def test_a_principal_lists_and_removes_its_own_subscriptions_and_never_anothers(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],  # noqa: F811
    alice_hook: EventReceiver,  # noqa: F811
) -> None:
    async with events_stack(fresh_stack, tmp_path, certificate) as (_, alice, bob):
        first = await subscribed(alice, alice_hook, "task.completed")
        second = await subscribed(alice, alice_hook, "task.failed", arguments={"tool": "x"})
        listed = (await alice.rpc("events/subscriptions/list")).body["result"]
        assert sorted(s["id"] for s in listed["subscriptions"]) == sorted([first, second])
        for entry in listed["subscriptions"]:
            assert alice_hook.secret not in str(entry)  # never a secret
            assert entry["deliveryStatus"]["active"] is True
        assert (await bob.rpc("events/subscriptions/list")).body["result"]["subscriptions"] == []
        foreign = (await bob.rpc("events/subscriptions/remove", {"id": first})).body["error"]
        assert foreign["code"] == INVALID_PARAMS and foreign["data"] == {"kind": "subscription"}
        removed = await alice.rpc("events/subscriptions/remove", {"id": first})
        assert removed.body["result"]["resultType"] == "complete"
        left = (await alice.rpc("events/subscriptions/list")).body["result"]["subscriptions"]
        assert [s["id"] for s in left] == [second]


async def test_a_subscription_naming_unknown_tasks_spends_the_not_found_bucket(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],  # noqa: F811
    alice_hook: EventReceiver,  # noqa: F811
) -> None:
    limits = {"not_found_burst": 2, "not_found_rate_per_minute": 1}
    async with events_stack(fresh_stack, tmp_path, certificate, **limits) as (_, alice, _bob):
        replies = [
            await subscribe(alice, alice_hook, "task.completed", {"taskId": new_task_id()})
            for _ in range(3)
        ]
        assert [r.body["error"]["code"] for r in replies] == [
            INVALID_PARAMS,
            INVALID_PARAMS,
            RATE_LIMITED,
        ]


async def test_query_string_variants_of_one_url_are_one_destination_for_handshakes(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],  # noqa: F811
    alice_hook: EventReceiver,  # noqa: F811
) -> None:
    async with events_stack(fresh_stack, tmp_path, certificate) as (_, alice, _bob):
        base = alice_hook.url
        alice_hook.confirm = False  # a prober's target: every handshake answers otherwise
        codes = []
        for n in range(8):
            alice_hook.url = f"{base}?variant={n}"
            codes.append((await subscribe(alice, alice_hook, "task.completed")).body["error"])
        assert len(alice_hook.handshakes) == HANDSHAKES_PER_DESTINATION
        expected = [CALLBACK_ENDPOINT_ERROR] * HANDSHAKES_PER_DESTINATION + [RATE_LIMITED] * 3
        assert [error["code"] for error in codes] == expected


async def test_an_operator_lists_and_ends_any_principals_subscriptions(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],  # noqa: F811
    alice_hook: EventReceiver,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with events_stack(fresh_stack, tmp_path, certificate) as (stack, alice, _bob):
        sub = await subscribed(alice, alice_hook, "task.completed")
        queue = stack.settings.task_queue

        async def operator(*argv: str) -> int:
            args = _parser().parse_args(["tasks", *argv])
            return await subscriptions_command(args, stack.client, queue)

        assert await operator("subscriptions", "alice") == 0
        listed = capsys.readouterr().out.splitlines()
        assert len(listed) == 1 and listed[0].startswith(f"{sub}  task.completed  {{}}  https://")
        assert alice_hook.secret not in listed[0]
        assert await operator("unsubscribe", "bob", sub) == 1  # not bob's
        assert await operator("unsubscribe", "alice", sub) == 0
        assert await subscriptions(alice) == []


async def test_a_subscription_never_outlives_its_jwts_expiry(temporal_client: Client) -> None:
    url, queue = "https://hooks.example/jwt", f"test-{uuid.uuid4()}"
    handshakes = Handshakes()
    expiry = datetime.now(UTC) + timedelta(minutes=5)
    request = SubscribeInput(
        "sub_jwt",
        "task.completed",
        {},
        url,
        "whsec_" + "A" * 32,
        86400.0,
        5,
        "challenge",
        credential="c" * 64,
        credential_expires_at=iso_timestamp(expiry),
    )
    async with Worker(
        temporal_client,
        task_queue=queue,
        workflows=[EventSubscriptionsWorkflow],
        activities=[handshakes.verify],
    ):
        handle = await temporal_client.start_workflow(
            EventSubscriptionsWorkflow.run,
            SubscriptionsInput("alice"),
            id=f"mcp-events-{queue}",
            task_queue=queue,
        )
        result = await asyncio.wait_for(
            handle.execute_update(SUBSCRIBE_UPDATE, request, result_type=SubscribeResult), 20
        )
        await handle.terminate()
    assert result.refresh_before == iso_timestamp(expiry)  # not a day: the token's exp


async def test_a_jwt_principal_carries_the_tokens_digest_and_expiry(
    key: rsa.RSAPrivateKey,  # noqa: F811
    endpoint: JwksServer,  # noqa: F811
) -> None:
    token = bearer(key, "k1")
    principal = await authenticator(endpoint).authenticate(token)
    claims = jwt.decode(token.split()[1], options={"verify_signature": False})
    assert principal.credential_expires_at == claims["exp"]
    assert principal.credential == token_hash(token.split()[1])
