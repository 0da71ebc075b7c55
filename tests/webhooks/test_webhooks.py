"""Durable webhooks on real Temporal, a real worker and a real HTTP receiver on 127.0.0.1 that
verifies every POST (tests/webhook_receiver.py); the signature and the endpoints file alone."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities import delivery as delivery_activities
from activities.delivery import WEBHOOK_MAX_BYTES, DeliverySender, encoded
from activities.webhook_health import EndpointHealth, SuspensionPolicy
from activities.webhooks import slack_body
from mcp_server.http.app import create_app
from mcp_server.protocol.frame.errors import INVALID_PARAMS
from mcp_server.runtime.devserver import free_port
from mcp_server.tasks.expiry import sweep
from mcp_server.tasks.pending_webhooks import pending_deliveries
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.contracts.webhooks import (
    GONE_ERROR,
    REJECTED_ERROR,
    SUSPENDED_ERROR,
    UNKNOWN_ENDPOINT_ERROR,
    WebhookDelivery,
)
from mcp_tasks.identity import ANONYMOUS
from mcp_tasks.settings import ConfigError, Settings
from mcp_tasks.webhooks.endpoints import WebhookEndpoints, load_endpoints
from mcp_tasks.webhooks.signature import (
    ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SecretError,
    signed_headers,
    signing_key,
)
from tests.conftest import StackFactory
from tests.dev_process import MCP_TASKS
from tests.time_skipping import worker_of_its_own
from tests.webhook_receiver import WebhookReceiver
from tests.workflows.test_task_state import replay
from workflows.delivery import WebhookDeliveryWorkflow

SECRET = "whsec_" + base64.b64encode(b"the-webhook-key-of-the-tests-32b").decode()
RAW_SECRET = "a-webhook-secret-of-an-earlier-release"
EVERY_EVENT = ["input_required", "completed", "failed", "cancelled"]
PUBLIC_URL = "https://mcp.example.com"
# Deliveries recorded by the code before them (one delivered, one refused with 410 Gone).
WEBHOOK_HISTORIES = Path(__file__).parents[1] / "webhook_histories"
APPROVE = {"decision": {"action": "accept", "content": {"decision": "approve"}}}


def write_endpoints(directory: Path, endpoints: list[dict[str, Any]]) -> str:
    path = directory / "webhooks.json"
    path.write_text(json.dumps(endpoints))
    return str(path)


# ----- signing and verifying ------------------------------------------------------------


def signed(body: bytes, *secrets: str, at: int | None = None) -> dict[str, str]:
    keys = [signing_key(secret) for secret in secrets or (SECRET,)]
    now = int(time.time()) if at is None else at
    return signed_headers(keys, "mcp-task-1.webhook.r.1", now, body)


def test_a_signed_delivery_is_the_standard_webhooks_signature_and_verifies_with_it() -> None:
    body = b'{"id":"mcp-task-1.webhook.r.1"}'
    headers = signed(body, at=1_800_000_000)
    assert headers[SIGNATURE_HEADER].startswith("v1,")
    at = datetime.fromtimestamp(1_800_000_000, UTC)
    reference = Webhook(SECRET).sign("mcp-task-1.webhook.r.1", at, body)
    assert headers[SIGNATURE_HEADER] == reference  # the package's own signature, byte for byte
    lowercase = {name.lower(): value for name, value in signed(body).items()}
    assert Webhook(SECRET).verify(body, lowercase) == {"id": "mcp-task-1.webhook.r.1"}


def test_the_delivery_id_a_receiver_dedups_on_is_signed() -> None:
    headers = signed(b"{}")
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(SECRET).verify(b"{}", {**headers, ID_HEADER: "mcp-task-1.webhook.r.2"})


def _now() -> int:
    return int(time.time())


@pytest.mark.parametrize(
    ("headers", "body", "why"),
    [
        (
            lambda: signed(b"{}", "whsec_" + base64.b64encode(b"k" * 32).decode()),
            b"{}",
            "No matching signature",
        ),
        (lambda: signed(b'{"event":"completed"}'), b'{"event":"failed"}', "No matching"),
        (lambda: signed(b"{}", at=_now() - 301), b"{}", "too old"),
        (lambda: signed(b"{}", at=_now() + 301), b"{}", "too new"),
        (lambda: {**signed(b"{}"), TIMESTAMP_HEADER: "soon"}, b"{}", "Invalid Signature Headers"),
        (lambda: {ID_HEADER: "x", TIMESTAMP_HEADER: str(_now())}, b"{}", "Missing"),
    ],
    ids=["wrong-secret", "tampered-body", "stale", "from-the-future", "bad-timestamp", "unsigned"],
)
def test_a_receiver_refuses_what_it_cannot_trust(
    headers: Callable[[], dict[str, str]], body: bytes, why: str
) -> None:
    with pytest.raises(WebhookVerificationError, match=why):
        Webhook(SECRET).verify(body, headers())


def test_a_rotated_secret_signs_beside_the_current_one_and_either_verifies() -> None:
    previous = "whsec_" + base64.b64encode(b"the-previous-key-of-the-tests-32").decode()
    headers = signed(b"{}", previous, SECRET)
    assert len(headers[SIGNATURE_HEADER].split(" ")) == 2
    fresh = signed_headers(
        [signing_key(previous), signing_key(SECRET)], "m", int(time.time()), b"{}"
    )
    for secret in (previous, SECRET):  # a receiver that has either secret accepts it
        assert Webhook(secret).verify(b"{}", fresh) == {}


def test_a_plain_secret_of_an_earlier_release_still_signs_with_its_utf8_bytes() -> None:
    now = int(time.time())
    headers = signed_headers([signing_key(RAW_SECRET)], "m", now, b"{}")
    assert Webhook(RAW_SECRET.encode()).verify(b"{}", headers) == {}
    whsec = "whsec_" + base64.b64encode(RAW_SECRET.encode()).decode()  # the same key, new form
    assert Webhook(whsec).verify(b"{}", headers) == {}


@pytest.mark.parametrize(
    ("secret", "why"),
    [
        ("short", "at least 16 characters"),
        ("whsec_not base64!", "followed by base64"),
        ("whsec_" + base64.b64encode(b"k" * 16).decode(), r"24 to 64 bytes \(it holds 16\)"),
    ],
    ids=["short-plain", "not-base64", "short-key"],
)
def test_a_secret_that_cannot_sign_is_refused_without_showing_it(secret: str, why: str) -> None:
    with pytest.raises(SecretError, match=why) as raised:
        signing_key(secret)
    assert secret not in str(raised.value)


# ----- the endpoints file ---------------------------------------------------------------


def test_the_server_gets_ids_and_events_per_tool_and_the_worker_urls_and_secrets(
    tmp_path: Path,
) -> None:
    path = write_endpoints(
        tmp_path,
        [
            {
                "id": "ops",
                "url": "https://hooks.example.com/a",
                "secret_env": "OPS_SECRET",
                "events": ["completed", "input_required"],
            },
            {
                "id": "chat",
                "url": "https://hooks.slack.com/services/T/B/X",
                "format": "slack",
                "events": ["failed"],
                "tools": ["deploy"],
            },
        ],
    )
    server = load_endpoints(path, resolve_secrets=False, env={})
    assert server.for_tool("request_approval") == [
        {"endpoint": "ops", "events": ["input_required", "completed"]}
    ]
    assert [w["endpoint"] for w in server.for_tool("deploy")] == ["ops", "chat"]
    assert server.get("ops") is not None and server.get("ops").url == ""  # type: ignore[union-attr]
    worker = load_endpoints(path, resolve_secrets=True, env={"OPS_SECRET": SECRET})
    ops = worker.get("ops")
    assert ops is not None and ops.url == "https://hooks.example.com/a"
    assert ops.keys == (signing_key(SECRET),)
    assert SECRET not in repr(ops) and "hooks.example.com" not in repr(ops)
    assert load_endpoints(None, resolve_secrets=True).for_tool("deploy") == []


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"id": "ops"}, "must be a JSON list of endpoints"),
        (
            [{"id": "ops", "url": "ftp://x", "secret": SECRET, "events": ["completed"]}],
            "[0].url: must be an http:// or https:// URL with a host",
        ),
        (
            [{"id": "ops", "url": "https://", "secret": SECRET, "events": ["completed"]}],
            "[0].url: must be an http:// or https:// URL with a host",
        ),
        (
            [{"id": "ops", "url": "https://x", "events": ["completed"]}],
            "[0]: needs a secret or a secret_env",
        ),
        (
            [
                {
                    "id": "ops",
                    "url": "https://x",
                    "secret": SECRET,
                    "secret_env": "S",
                    "events": ["completed"],
                }
            ],
            "[0]: give either secret or secret_env, not both",
        ),
        (
            [{"id": "ops", "url": "https://x", "secret": "short", "events": ["completed"]}],
            "[0].secret: must be whsec_<base64> or at least 16 characters",
        ),
        (
            [{"id": "ops", "url": "https://x", "secret": SECRET, "events": ["done"]}],
            "[0].events[0]: must be one of 'input_required', 'completed', 'failed' or 'cancelled'",
        ),
        ([{"id": "ops", "url": "https://x", "secret": SECRET, "events": []}], "[0].events: "),
        (
            [{"id": "o p", "url": "https://x", "secret": SECRET, "events": ["failed"]}],
            "[0].id: must be 1-64 characters of A-Z, a-z, 0-9, _ and -",
        ),
        (
            [{"id": "ops", "url": "https://x", "secret": SECRET, "events": ["failed"], "to": 1}],
            "[0].to: is not a known key",
        ),
        (
            [
                {"id": "ops", "url": "https://x", "secret": SECRET, "events": ["failed"]},
                {"id": "ops", "url": "https://y", "secret": SECRET, "events": ["failed"]},
            ],
            "[1].id: 'ops' is used twice",
        ),
    ],
    ids=[
        "not-a-list",
        "ftp",
        "no-host",
        "no-secret",
        "two-secrets",
        "short-secret",
        "unknown-event",
        "no-events",
        "bad-id",
        "unknown-key",
        "duplicate-id",
    ],
)
def test_a_bad_endpoints_file_is_refused_with_where_and_why(
    tmp_path: Path, document: object, message: str
) -> None:
    path = tmp_path / "webhooks.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ConfigError) as raised:
        load_endpoints(str(path), resolve_secrets=False)
    assert str(raised.value).startswith(f"MCP_TASKS_WEBHOOKS_FILE {path}: ")
    assert message in str(raised.value)
    assert SECRET not in str(raised.value)


def test_secrets_being_rotated_are_listed_and_each_is_checked(tmp_path: Path) -> None:
    new, old = SECRET, RAW_SECRET
    rotating = {"id": "ops", "url": "https://x", "secret_env": ["NEW", "OLD"], "events": ["failed"]}
    path = write_endpoints(tmp_path, [rotating])
    ops = load_endpoints(path, resolve_secrets=True, env={"NEW": new, "OLD": old}).get("ops")
    assert ops is not None and ops.keys == (signing_key(new), signing_key(old))
    with pytest.raises(ConfigError, match=r"variable OLD must hold a webhook secret \(it is not"):
        load_endpoints(path, resolve_secrets=True, env={"NEW": new})
    for bad, why in [
        ([], "must list 1 to 4 secrets"),
        (["short"], "must be whsec_<base64> or at least 16"),
    ]:
        path = write_endpoints(tmp_path, [{**rotating, "secret_env": None, "secret": bad}])
        with pytest.raises(ConfigError, match=f"\\[0\\].secret: {why}"):
            load_endpoints(path, resolve_secrets=False)


def test_a_missing_secret_variable_stops_the_worker_not_the_server(tmp_path: Path) -> None:
    path = write_endpoints(
        tmp_path,
        [{"id": "ops", "url": "https://x", "secret_env": "NOT_SET_HERE", "events": ["failed"]}],
    )
    assert len(load_endpoints(path, resolve_secrets=False, env={})) == 1
    with pytest.raises(ConfigError, match=r"\[0\]\.secret_env: the environment variable "):
        load_endpoints(path, resolve_secrets=True, env={})


def test_an_unreadable_or_invalid_file_is_refused(tmp_path: Path, registry: ToolRegistry) -> None:
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(ConfigError, match="is not valid JSON"):
        load_endpoints(str(tmp_path / "broken.json"), resolve_secrets=False)
    settings = Settings.from_env({"MCP_TASKS_WEBHOOKS_FILE": str(tmp_path / "absent.json")})
    with pytest.raises(ConfigError, match="cannot be read"):  # before the server serves
        create_app(settings, registry)


def test_the_slack_form_is_one_escaped_text_with_the_inbox_link() -> None:
    task = {
        "taskId": "mcp-task-1",
        "tool": "deploy",
        "statusMessage": "Approve <prod> & go?",
        "inputRequests": [{"key": "approve", "message": "Release 1.2 to prod?"}],
    }
    delivery = WebhookDelivery("mcp-task-1.webhook.r.1", "chat", "input_required", "t", task)
    body = slack_body(delivery, PUBLIC_URL)
    assert body == {
        "text": "Task mcp-task-1 (deploy) waits for input: Approve &lt;prod&gt; &amp; go?\n"
        "• Release 1.2 to prod?\n"
        "<https://mcp.example.com/inbox/tasks/mcp-task-1|Open in the inbox>"
    }


# ----- end to end -----------------------------------------------------------------------


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    hook = WebhookReceiver(free_port(), SECRET)
    hook.start()
    yield hook
    hook.stop()


def endpoint(url: str, events: list[str], **extra: Any) -> dict[str, Any]:
    return {"id": "ops", "url": url, "secret": SECRET, "events": events, **extra}


async def test_an_approval_notifies_once_when_it_asks_and_once_when_it_completes(
    fresh_stack: StackFactory, tmp_path: Path, receiver: WebhookReceiver, temporal_client: Client
) -> None:
    hooks = write_endpoints(tmp_path, [endpoint(receiver.url, EVERY_EVENT)])
    async with fresh_stack(webhooks_file=hooks, public_url=PUBLIC_URL) as stack:
        task_id = await stack.mcp.create_task("request_approval", {"message": "Ship 1.2?"})
        await receiver.wait_for(lambda r: r.events() == ["input_required"], 10, "the question")
        (asked,) = receiver.unique().values()
        assert asked.id.startswith(f"{task_id}.webhook.") and asked.body["id"] == asked.id
        assert asked.body["event"] == "input_required"
        assert asked.body["inboxUrl"] == f"{PUBLIC_URL}/inbox/tasks/{task_id}"
        task = asked.body["task"]
        assert task["taskId"] == task_id and task["tool"] == "request_approval"
        assert task["status"] == "input_required"
        assert task["inputRequests"] == [{"key": "decision", "message": "Ship 1.2?"}]
        assert task["statusMessage"] == "Waiting for a decision"
        assert datetime.fromisoformat(asked.body["occurredAt"]) <= datetime.now(UTC)
        await stack.mcp.update_task(task_id, APPROVE)
        await stack.mcp.wait_terminal(task_id)
        await receiver.wait_for(lambda r: len(r.unique()) == 2, 10, "the completion")
        done = next(d for d in receiver.unique().values() if d.body["event"] == "completed")
        assert done.id != asked.id and done.body["task"]["status"] == "completed"
        assert done.body["task"]["statusMessage"] == "Completed: Decision: approved"
        assert done.body["task"]["inputRequests"] == []
        assert receiver.events() == ["completed", "input_required"] and not receiver.refused
        # A delivery is no task: not readable, not listed, not swept.
        assert (await stack.mcp.get_task(done.id)).error["code"] == INVALID_PARAMS
        store = TemporalTaskStore(temporal_client, stack.settings.task_queue)
        listed, _ = await store.list_owned(ANONYMOUS.digest, 1000, None)
        assert not [t for t in listed if ".webhook." in t.task_id]
        later = datetime.now(UTC) + timedelta(days=30)
        queue = stack.settings.task_queue
        assert await sweep(temporal_client, queue, {"request_approval": 1}, later) == [task_id]


async def test_failed_and_cancelled_tasks_notify_as_they_end(
    fresh_stack: StackFactory, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    hooks = write_endpoints(tmp_path, [endpoint(receiver.url, ["failed", "cancelled"])])
    async with fresh_stack(webhooks_file=hooks) as stack:
        failing = await stack.mcp.create_task("protocol_error_job")
        slow = await stack.mcp.create_task("slow_compute", {"seconds": 60})
        await stack.mcp.wait_status(slow, "working")
        await stack.mcp.cancel_task(slow)
        await receiver.wait_for(lambda r: len(r.unique()) == 2, 15, "both ends")
        by_task = {d.body["task"]["taskId"]: d.body for d in receiver.unique().values()}
        assert by_task[failing]["event"] == "failed"
        assert by_task[failing]["task"]["status"] == "failed"
        assert "simulated internal error" in by_task[failing]["task"]["statusMessage"]
        assert by_task[slow]["event"] == "cancelled"
        assert by_task[slow]["task"]["status"] == "cancelled"
        assert "inboxUrl" not in by_task[slow]  # no public URL set
        assert (await stack.mcp.wait_terminal(failing))["status"] == "failed"
        assert (await stack.mcp.wait_terminal(slow))["status"] == "cancelled"


async def test_only_the_tools_and_events_an_endpoint_names_notify_it(
    fresh_stack: StackFactory, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    hooks = write_endpoints(
        tmp_path,
        [
            endpoint(receiver.url, ["completed"], tools=["greet_no_such_tool"]),
            {**endpoint(receiver.url, ["completed"]), "id": "all"},
        ],
    )
    async with fresh_stack(webhooks_file=hooks) as stack:
        task_id = await stack.mcp.create_task("request_approval", {"message": "Quiet?"})
        await stack.mcp.wait_status(task_id, "input_required")
        await stack.mcp.update_task(task_id, APPROVE)
        await stack.mcp.wait_terminal(task_id)
        await receiver.wait_for(lambda r: len(r.unique()) == 1, 10, "the completion")
        (only,) = receiver.unique().values()
        assert only.body["event"] == "completed"  # no input_required: not among its events


async def test_a_refusal_is_not_retried_and_the_delivery_ends_failed(
    fresh_stack: StackFactory, tmp_path: Path, receiver: WebhookReceiver, temporal_client: Client
) -> None:
    receiver.status = 400
    hooks = write_endpoints(tmp_path, [endpoint(receiver.url, ["input_required"])])
    async with fresh_stack(webhooks_file=hooks) as stack:
        task_id = await stack.mcp.create_task("request_approval", {"message": "No?"})
        await receiver.wait_for(lambda r: len(r.deliveries) == 1, 10, "the delivery")
        handle = temporal_client.get_workflow_handle(receiver.deliveries[0].id)
        deadline = time.monotonic() + 10
        while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            assert time.monotonic() < deadline, "the refused delivery still runs"
            await asyncio.sleep(0.1)
        assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED
        assert len(receiver.deliveries) == 1  # closed: no attempt can follow
        # The task itself is not affected by its notification.
        assert (await stack.mcp.get_task(task_id)).result["status"] == "input_required"
        await stack.mcp.cancel_task(task_id)


async def test_a_secret_argument_never_reaches_a_webhook(
    fresh_stack: StackFactory, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    key = "sk-live-0123456789abcdef"
    hooks = write_endpoints(tmp_path, [endpoint(receiver.url, EVERY_EVENT)])
    async with fresh_stack(webhooks_file=hooks) as stack:
        task_id = await stack.mcp.create_task("tests_leaky", {"api_key": key, "fail": True})
        await receiver.wait_for(lambda r: r.events() == ["input_required"], 10, "the question")
        answer = {"go": {"action": "accept", "content": {"go": True}}}
        assert "error" not in (await stack.mcp.update_task(task_id, answer)).body
        # The failed task's delivery (a loaded machine at the end of the suite took over 10 s).
        await receiver.wait_for(lambda r: len(r.unique()) == 2, 30, "the failure")
        by_event = {d.body["event"]: d.body["task"] for d in receiver.unique().values()}
        assert by_event["input_required"]["inputRequests"][0]["message"] == "Use key [redacted]?"
        assert by_event["failed"]["statusMessage"] == "Task failed: the API refused key [redacted]"
        assert not [d for d in receiver.deliveries if key in json.dumps(d.body)]


@pytest.mark.parametrize("command", [["worker"], ["dev", "--data-dir", "DATA"]])
def test_a_worker_without_its_webhook_secret_stops_at_once_with_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    endpoint = {
        "id": "ops",
        "url": "https://x",
        "secret_env": "UNSET_HOOK_SECRET",
        "events": ["failed"],
    }
    hooks = write_endpoints(tmp_path, [endpoint])
    env = {**os.environ, "MCP_TASKS_WEBHOOKS_FILE": hooks, "MCP_TASKS_PORT": str(free_port())}
    env.pop("UNSET_HOOK_SECRET", None)
    arguments = [str(tmp_path / "data") if part == "DATA" else part for part in command]
    done = subprocess.run(
        [MCP_TASKS, *arguments], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"mcp-tasks: MCP_TASKS_WEBHOOKS_FILE {hooks}: [0].secret_env: the environment variable "
        "UNSET_HOOK_SECRET must hold a webhook secret (it is not set)"
    )


TWO_GATES = """
[[steps]]
name = "canary"
run = "true"
approval = "Start the canary?"

[[steps]]
name = "rollout"
run = "true"
approval = "Roll out everywhere?"
"""


def holding(count: int) -> Callable[[WebhookReceiver], bool]:
    return lambda receiver: len(receiver.unique()) == count


def answered(key: str) -> Callable[[dict[str, Any]], bool]:
    return lambda task: key not in task.get("inputRequests", {})


async def test_each_question_a_task_asks_is_a_delivery_of_its_own(
    fresh_stack: StackFactory, tmp_path: Path, receiver: WebhookReceiver, pipelines_dir: Path
) -> None:
    (pipelines_dir / "two-gates.toml").write_text(TWO_GATES)
    hooks = write_endpoints(tmp_path, [endpoint(receiver.url, EVERY_EVENT, tools=["deploy"])])
    async with fresh_stack(webhooks_file=hooks) as stack:
        task_id = await stack.mcp.create_task("deploy", {"pipeline": "two-gates"})
        for count in (1, 2):
            waiting = await stack.mcp.wait_status(task_id, "input_required", within=15)
            await receiver.wait_for(holding(count), 10, f"question {count}")
            (key,) = waiting["inputRequests"]
            approve = {key: {"action": "accept", "content": {"approve": True}}}
            assert "error" not in (await stack.mcp.update_task(task_id, approve)).body
            await stack.mcp.wait_for(task_id, answered(key))
        assert (await stack.mcp.wait_terminal(task_id, within=15))["status"] == "completed"
        await receiver.wait_for(lambda r: len(r.unique()) == 3, 10, "the completion")
        bodies = sorted(receiver.unique().values(), key=lambda d: int(d.id.rsplit(".", 1)[1]))
        events = [d.body["event"] for d in bodies]
        assert events == ["input_required", "input_required", "completed"]
        sequences = [d.body["sequence"] for d in bodies]  # the task's order: only grows
        assert sequences == sorted(set(sequences)) and sequences[0] > 0
        asked = [d.body["task"]["inputRequests"][0]["message"] for d in bodies[:2]]
        assert asked[0].startswith("Start the canary?") and asked[1].startswith("Roll out")


def test_a_body_over_the_cap_is_refused_for_good() -> None:
    with pytest.raises(ApplicationError) as raised:
        encoded({"text": "x" * WEBHOOK_MAX_BYTES}, WEBHOOK_MAX_BYTES)
    assert raised.value.non_retryable and raised.value.type == REJECTED_ERROR


async def test_a_slack_endpoint_gets_its_text_form_unsigned(
    fresh_stack: StackFactory, tmp_path: Path
) -> None:
    slack = WebhookReceiver(free_port(), secret="")
    slack.start()
    chat = {"id": "chat", "url": slack.url, "format": "slack", "events": ["input_required"]}
    hooks = write_endpoints(tmp_path, [chat])
    try:
        async with fresh_stack(webhooks_file=hooks, public_url=PUBLIC_URL) as stack:
            task_id = await stack.mcp.create_task("request_approval", {"message": "Ship <it>?"})
            await slack.wait_for(lambda r: len(r.unique()) == 1, 10, "the message")
            (message,) = slack.unique().values()
            assert message.body == {
                "text": f"Task {task_id} (request_approval) waits for input: Waiting for a "
                "decision\n• Ship &lt;it&gt;?\n"
                f"<{PUBLIC_URL}/inbox/tasks/{task_id}|Open in the inbox>"
            }
            assert SIGNATURE_HEADER not in message.headers
            await stack.mcp.cancel_task(task_id)
    finally:
        slack.stop()


async def test_an_endpoint_the_worker_no_longer_has_is_dropped_not_retried() -> None:
    sender = DeliverySender(WebhookEndpoints())
    delivery = WebhookDelivery("mcp-task-1.webhook.r.1", "gone", "completed", "t", {})
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(sender.deliver_webhook, delivery)
    assert raised.value.non_retryable and raised.value.type == UNKNOWN_ENDPOINT_ERROR
    assert "'gone' is not in this worker's MCP_TASKS_WEBHOOKS_FILE" in raised.value.message


async def test_a_question_for_approvers_names_them_and_who_asked(
    fresh_stack: StackFactory, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    hooks = write_endpoints(tmp_path, [endpoint(receiver.url, ["input_required"])])
    async with fresh_stack(webhooks_file=hooks) as stack:
        arguments = {"message": "Ship 1.3?", "approvers": ["release-manager", "scope:release"]}
        task_id = await stack.mcp.create_task("request_approval", arguments)
        await receiver.wait_for(lambda r: r.events() == ["input_required"], 10, "the question")
        (asked,) = receiver.unique().values()
        task = asked.body["task"]
        assert task["inputRequests"] == [
            {
                "key": "decision",
                "message": "Ship 1.3?",
                "approvers": ["release-manager", "scope:release"],
            }
        ]
        assert task["requestedBy"] == "anonymous"
        await stack.mcp.cancel_task(task_id)


# ----- retries and back-off, under time skipping ----------------------------------------------


def delivery_to(endpoint_id: str) -> WebhookDelivery:
    task = {"taskId": "mcp-task-1", "tool": "request_approval", "status": "input_required"}
    return WebhookDelivery(
        delivery_id=f"mcp-task-1.webhook.{uuid.uuid4().hex}",
        endpoint=endpoint_id,
        event="input_required",
        occurred_at=datetime.now(UTC).isoformat(),
        task=task,
    )


@contextlib.asynccontextmanager
async def delivering(
    env: WorkflowEnvironment, deliver: Callable[..., Any], delivery: WebhookDelivery
) -> AsyncIterator[WorkflowHandle[Any, Any]]:
    """The delivery workflow started on a worker of its own whose clock skips the back-off."""
    async with worker_of_its_own(env, [WebhookDeliveryWorkflow], [deliver]) as queue:
        yield await env.client.start_workflow(
            WebhookDeliveryWorkflow.run, delivery, id=delivery.delivery_id, task_queue=queue
        )


def sender(tmp_path: Path, *endpoints: dict[str, Any]) -> DeliverySender:
    hooks = write_endpoints(tmp_path, list(endpoints))
    return DeliverySender(load_endpoints(hooks, resolve_secrets=True))


async def test_a_failing_receiver_is_retried_with_the_same_delivery_id(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    receiver.status = 503
    deliver = sender(tmp_path, endpoint(receiver.url, ["input_required"])).deliver_webhook
    delivery = delivery_to("ops")
    async with delivering(time_skipping_env, deliver, delivery) as handle:
        await receiver.wait_for(lambda r: len(r.deliveries) >= 3, 15, "retries")
        receiver.status = 200
        done = await asyncio.wait_for(handle.result(), timeout=15)
    assert done["status"] == 200 and done["attempt"] >= 3
    assert list(receiver.unique()) == [delivery.delivery_id]
    assert "" not in {d.headers[TIMESTAMP_HEADER] for d in receiver.deliveries}


async def test_a_redirect_is_not_followed_but_retried_at_the_configured_url(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    elsewhere = WebhookReceiver(free_port(), SECRET)
    elsewhere.start()
    receiver.status, receiver.location = 307, elsewhere.url
    deliver = sender(tmp_path, endpoint(receiver.url, ["input_required"])).deliver_webhook
    try:
        async with delivering(time_skipping_env, deliver, delivery_to("ops")) as handle:
            await receiver.wait_for(lambda r: len(r.deliveries) >= 2, 15, "a retry")
            await handle.terminate("the test has seen the retry")
        assert not elsewhere.deliveries and not elsewhere.refused
    finally:
        elsewhere.stop()


async def test_a_receiver_that_does_not_answer_in_time_is_tried_again(
    time_skipping_env: WorkflowEnvironment,
    tmp_path: Path,
    receiver: WebhookReceiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(delivery_activities, "TIMEOUT_S", 0.5)  # the worker runs in this process
    receiver.answer_after.clear()
    deliver = sender(tmp_path, endpoint(receiver.url, ["input_required"])).deliver_webhook
    async with delivering(time_skipping_env, deliver, delivery_to("ops")) as handle:
        await receiver.wait_for(lambda r: len(r.deliveries) >= 2, 15, "a retry after a time-out")
        receiver.answer_after.set()
        done = await asyncio.wait_for(handle.result(), timeout=15)
    assert done["attempt"] >= 2 and len(receiver.unique()) == 1


async def test_a_410_gone_stops_the_delivery_at_its_first_answer(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    receiver.status = 410
    deliver = sender(tmp_path, endpoint(receiver.url, ["input_required"])).deliver_webhook
    async with delivering(time_skipping_env, deliver, delivery_to("ops")) as handle:
        with pytest.raises(WorkflowFailureError) as raised:
            await asyncio.wait_for(handle.result(), timeout=15)
    activity_failure = raised.value.cause  # the workflow failed of its activity's failure
    assert isinstance(activity_failure, ActivityError)
    cause = activity_failure.cause
    assert isinstance(cause, ApplicationError) and cause.type == GONE_ERROR
    assert len(receiver.deliveries) == 1  # never tried again


async def test_rotated_secrets_of_the_file_each_sign_and_a_receiver_with_either_verifies(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    previous = "whsec_" + base64.b64encode(b"the-previous-key-of-the-tests-32").decode()
    old_receiver = WebhookReceiver(free_port(), previous)
    old_receiver.start()
    rotated = {**endpoint(old_receiver.url, ["input_required"]), "secret": [previous, SECRET]}
    try:
        deliver = sender(tmp_path, rotated).deliver_webhook
        async with delivering(time_skipping_env, deliver, delivery_to("ops")) as handle:
            assert (await asyncio.wait_for(handle.result(), timeout=15))["status"] == 204
        (delivered,) = old_receiver.deliveries  # verified there with the previous secret
        assert len(delivered.headers[SIGNATURE_HEADER].split(" ")) == 2
        assert Webhook(SECRET).verify(delivered.raw, delivered.headers)["id"] == delivered.id
    finally:
        old_receiver.stop()


def test_an_endpoint_is_suspended_by_a_sustained_failure_rate_not_a_blip() -> None:
    now = [0.0]
    health = EndpointHealth(SuspensionPolicy(600, 10, 0.9), clock=lambda: now[0])
    for _ in range(9):
        health.record("ops", succeeded=False)
    assert not health.is_suspended("ops")  # fewer attempts than the sample needs
    health.record("ops", succeeded=False)
    assert health.wait_s("ops") == 300  # the oldest outcome leaves the window in 600 s
    now[0] = 500.0
    assert health.wait_s("ops") == 100
    now[0] = 601.0  # the failures aged out: it is tried again
    assert health.wait_s("ops") is None
    for succeeded in [True] * 2 + [False] * 8:  # 80 % failures: below the rate
        health.record("ops", succeeded=succeeded)
    assert not health.is_suspended("ops") and not health.is_suspended("other")


async def test_a_suspended_endpoint_is_not_called_and_its_delivery_waits_for_a_retry(
    tmp_path: Path, receiver: WebhookReceiver
) -> None:
    health = EndpointHealth(SuspensionPolicy(3600, 1, 1.0))
    health.record("ops", succeeded=False)
    hooks = write_endpoints(tmp_path, [endpoint(receiver.url, ["input_required"])])
    suspended = DeliverySender(load_endpoints(hooks, resolve_secrets=True), None, health)
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(suspended.deliver_webhook, delivery_to("ops"))
    assert raised.value.type == SUSPENDED_ERROR and not raised.value.non_retryable
    assert raised.value.next_retry_delay is not None
    assert raised.value.next_retry_delay > timedelta(seconds=200)
    assert not receiver.deliveries


async def test_operators_see_a_suspended_endpoint_and_its_waiting_delivery_in_the_cli(
    fresh_stack: StackFactory, tmp_path: Path, receiver: WebhookReceiver, temporal_client: Client
) -> None:
    receiver.status = 503
    hooks = write_endpoints(tmp_path, [endpoint(receiver.url, ["input_required"])])
    suspend_at_once = {"webhook_suspend_min_attempts": 1, "webhook_suspend_failure_rate": 1.0}
    async with fresh_stack(webhooks_file=hooks, **suspend_at_once) as stack:
        task_id = await stack.mcp.create_task("request_approval", {"message": "Down?"})
        await receiver.wait_for(lambda r: len(r.deliveries) == 1, 10, "the first attempt")
        queue = stack.settings.task_queue
        deadline = time.monotonic() + 15
        while not [d for d in await pending_deliveries(temporal_client, queue) if d.suspended]:
            assert time.monotonic() < deadline, "the endpoint was not shown suspended"
            await asyncio.sleep(0.2)
        env = {
            **os.environ,
            "MCP_TASKS_TEMPORAL_ADDRESS": temporal_client.service_client.config.target_host,
            "MCP_TASKS_TASK_QUEUE": queue,
        }
        process = await asyncio.create_subprocess_exec(
            MCP_TASKS, "tasks", "webhooks", "--json", env=env, stdout=subprocess.PIPE
        )
        out, _ = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0
        (line,) = [json.loads(text) for text in out.decode().splitlines()]
        assert line["endpoint"] == "ops" and line["pending"] == 1 and line["suspended"] is True
        assert "suspended after sustained failure" in line["last_failure"]
        assert len(receiver.deliveries) == 1  # suspended: not called again
        await stack.mcp.cancel_task(task_id)


@pytest.mark.parametrize("history", sorted(WEBHOOK_HISTORIES.glob("*.json")), ids=lambda p: p.stem)
async def test_every_recorded_webhook_delivery_history_replays_with_todays_workflow(
    history: Path,
) -> None:
    """A delivery may retry for a day: a change to its workflow that would strand one in
    flight fails here, naming the history."""
    result = await replay(history, [WebhookDeliveryWorkflow])
    assert result.replay_failure is None
