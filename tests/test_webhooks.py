"""Durable webhooks on real Temporal, a real worker and a real HTTP receiver on 127.0.0.1 that
verifies every POST (tests/webhook_receiver.py); the signature and the endpoints file alone."""

from __future__ import annotations

import asyncio
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
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities import webhooks as webhook_activities
from activities.webhooks import MAX_BODY_BYTES, WebhookSender, encoded, slack_body
from mcp_server.http.app import create_app
from mcp_server.protocol.errors import INVALID_PARAMS
from mcp_server.runtime.devserver import free_port
from mcp_server.tasks.expiry import sweep
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.contracts.webhooks import REJECTED_ERROR, UNKNOWN_ENDPOINT_ERROR, WebhookDelivery
from mcp_tasks.identity import ANONYMOUS
from mcp_tasks.settings import ConfigError, Settings
from mcp_tasks.webhooks.endpoints import WebhookEndpoints, load_endpoints
from mcp_tasks.webhooks.signature import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SignatureError,
    signature,
    verify,
)
from tests.conftest import StackFactory
from tests.dev_process import MCP_TASKS
from tests.time_skipping import worker_of_its_own
from tests.webhook_receiver import WebhookReceiver
from workflows.webhooks import WebhookDeliveryWorkflow

SECRET = "a-webhook-secret-of-the-tests"
EVERY_EVENT = ["input_required", "completed", "failed", "cancelled"]
PUBLIC_URL = "https://mcp.example.com"
APPROVE = {"decision": {"action": "accept", "content": {"decision": "approve"}}}


def write_endpoints(directory: Path, endpoints: list[dict[str, Any]]) -> str:
    path = directory / "webhooks.json"
    path.write_text(json.dumps(endpoints))
    return str(path)


# ----- signing and verifying ------------------------------------------------------------


def signed(body: bytes, secret: str = SECRET, at: int = 1_800_000_000) -> dict[str, str]:
    return {
        DELIVERY_HEADER: "mcp-task-1.webhook.r.1",
        TIMESTAMP_HEADER: str(at),
        SIGNATURE_HEADER: signature(secret, at, body),
    }


def test_a_signed_delivery_verifies_and_names_its_id() -> None:
    body = b'{"id":"mcp-task-1.webhook.r.1"}'
    lowercase = {name.lower(): value for name, value in signed(body).items()}
    assert verify(SECRET, lowercase, body, now=1_800_000_100) == "mcp-task-1.webhook.r.1"
    assert signed(body)[SIGNATURE_HEADER].startswith("v1=")


@pytest.mark.parametrize(
    ("headers", "body", "now", "why"),
    [
        (signed(b"{}", secret="another-secret-entirely"), b"{}", 1_800_000_000, "does not match"),
        (signed(b'{"event":"completed"}'), b'{"event":"failed"}', 1_800_000_000, "not match"),
        (signed(b"{}"), b"{}", 1_800_000_301, "away from now"),
        (signed(b"{}"), b"{}", 1_799_999_600, "away from now"),
        ({**signed(b"{}"), TIMESTAMP_HEADER: "soon"}, b"{}", 1_800_000_000, "not a Unix time"),
        ({DELIVERY_HEADER: "x", TIMESTAMP_HEADER: "1"}, b"{}", 1, "missing"),
    ],
    ids=["wrong-secret", "tampered-body", "stale", "from-the-future", "bad-timestamp", "unsigned"],
)
def test_verify_refuses_what_it_cannot_trust(
    headers: dict[str, str], body: bytes, now: float, why: str
) -> None:
    with pytest.raises(SignatureError, match=why):
        verify(SECRET, headers, body, now=now)


def test_a_signature_of_a_rotated_secret_beside_the_current_one_verifies() -> None:
    headers = signed(b"{}")
    old = signature("the-previous-secret-value", 1_800_000_000, b"{}")
    headers[SIGNATURE_HEADER] = f"{old}, {headers[SIGNATURE_HEADER]}"
    assert verify(SECRET, headers, b"{}", now=1_800_000_000)


# ----- the endpoints file ---------------------------------------------------------------


def test_the_server_gets_ids_and_events_per_tool_and_the_worker_urls_and_secrets(
    tmp_path: Path,
) -> None:
    path = write_endpoints(
        tmp_path,
        [
            {"id": "ops", "url": "https://hooks.example.com/a", "secret_env": "OPS_SECRET",
             "events": ["completed", "input_required"]},
            {"id": "chat", "url": "https://hooks.slack.com/services/T/B/X", "format": "slack",
             "events": ["failed"], "tools": ["deploy"]},
        ],
    )  # fmt: skip
    server = load_endpoints(path, resolve_secrets=False, env={})
    assert server.for_tool("request_approval") == [
        {"endpoint": "ops", "events": ["input_required", "completed"]}
    ]
    assert [w["endpoint"] for w in server.for_tool("deploy")] == ["ops", "chat"]
    assert server.get("ops") is not None and server.get("ops").url == ""  # type: ignore[union-attr]
    worker = load_endpoints(path, resolve_secrets=True, env={"OPS_SECRET": SECRET})
    ops = worker.get("ops")
    assert ops is not None and ops.url == "https://hooks.example.com/a" and ops.secret == SECRET
    assert SECRET not in repr(ops) and "hooks.example.com" not in repr(ops)
    assert load_endpoints(None, resolve_secrets=True).for_tool("deploy") == []


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"id": "ops"}, "must be a JSON list of endpoints"),
        ([{"id": "ops", "url": "ftp://x", "secret": SECRET, "events": ["completed"]}],
         "[0].url: must be an http:// or https:// URL with a host"),
        ([{"id": "ops", "url": "https://", "secret": SECRET, "events": ["completed"]}],
         "[0].url: must be an http:// or https:// URL with a host"),
        ([{"id": "ops", "url": "https://x", "events": ["completed"]}],
         "[0]: needs a secret or a secret_env"),
        ([{"id": "ops", "url": "https://x", "secret": SECRET, "secret_env": "S",
           "events": ["completed"]}], "[0]: give either secret or secret_env, not both"),
        ([{"id": "ops", "url": "https://x", "secret": "short", "events": ["completed"]}],
         "[0].secret: must be at least 16 characters"),
        ([{"id": "ops", "url": "https://x", "secret": SECRET, "events": ["done"]}],
         "[0].events[0]: must be one of 'input_required', 'completed', 'failed' or 'cancelled'"),
        ([{"id": "ops", "url": "https://x", "secret": SECRET, "events": []}],
         "[0].events: "),
        ([{"id": "o p", "url": "https://x", "secret": SECRET, "events": ["failed"]}],
         "[0].id: must be 1-64 characters of A-Z, a-z, 0-9, _ and -"),
        ([{"id": "ops", "url": "https://x", "secret": SECRET, "events": ["failed"], "to": 1}],
         "[0].to: is not a known key"),
        ([{"id": "ops", "url": "https://x", "secret": SECRET, "events": ["failed"]},
          {"id": "ops", "url": "https://y", "secret": SECRET, "events": ["failed"]}],
         "[1].id: 'ops' is used twice"),
    ],
    ids=["not-a-list", "ftp", "no-host", "no-secret", "two-secrets", "short-secret",
         "unknown-event", "no-events", "bad-id", "unknown-key", "duplicate-id"],
)  # fmt: skip
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
    task = {"taskId": "mcp-task-1", "tool": "deploy", "statusMessage": "Approve <prod> & go?",
            "inputRequests": [{"key": "approve", "message": "Release 1.2 to prod?"}]}  # fmt: skip
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
        await receiver.wait_for(lambda r: len(r.unique()) == 2, 10, "the failure")
        by_event = {d.body["event"]: d.body["task"] for d in receiver.unique().values()}
        assert by_event["input_required"]["inputRequests"][0]["message"] == "Use key [redacted]?"
        assert by_event["failed"]["statusMessage"] == "Task failed: the API refused key [redacted]"
        assert not [d for d in receiver.deliveries if key in json.dumps(d.body)]


@pytest.mark.parametrize("command", [["worker"], ["dev", "--data-dir", "DATA"]])
def test_a_worker_without_its_webhook_secret_stops_at_once_with_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    endpoint = {"id": "ops", "url": "https://x", "secret_env": "UNSET_HOOK_SECRET",
                "events": ["failed"]}  # fmt: skip
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
        "UNSET_HOOK_SECRET must hold a secret of at least 16 characters (it is not set)"
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
        asked = [d.body["task"]["inputRequests"][0]["message"] for d in bodies[:2]]
        assert asked[0].startswith("Start the canary?") and asked[1].startswith("Roll out")


def test_a_body_over_the_cap_is_refused_for_good() -> None:
    with pytest.raises(ApplicationError) as raised:
        encoded({"text": "x" * MAX_BODY_BYTES})
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
    sender = WebhookSender(WebhookEndpoints(), None)
    delivery = WebhookDelivery("mcp-task-1.webhook.r.1", "gone", "completed", "t", {})
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(sender.deliver, delivery)
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
            {"key": "decision", "message": "Ship 1.3?",
             "approvers": ["release-manager", "scope:release"]}
        ]  # fmt: skip
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


def sender(tmp_path: Path, *endpoints: dict[str, Any]) -> WebhookSender:
    hooks = write_endpoints(tmp_path, list(endpoints))
    return WebhookSender(load_endpoints(hooks, resolve_secrets=True), None)


async def test_a_failing_receiver_is_retried_with_the_same_delivery_id(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    receiver.status = 503
    deliver = sender(tmp_path, endpoint(receiver.url, ["input_required"])).deliver
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
    deliver = sender(tmp_path, endpoint(receiver.url, ["input_required"])).deliver
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
    monkeypatch.setattr(webhook_activities, "TIMEOUT_S", 0.5)  # the worker runs in this process
    receiver.answer_after.clear()
    deliver = sender(tmp_path, endpoint(receiver.url, ["input_required"])).deliver
    async with delivering(time_skipping_env, deliver, delivery_to("ops")) as handle:
        await receiver.wait_for(lambda r: len(r.deliveries) >= 2, 15, "a retry after a time-out")
        receiver.answer_after.set()
        done = await asyncio.wait_for(handle.result(), timeout=15)
    assert done["attempt"] >= 2 and len(receiver.unique()) == 1
