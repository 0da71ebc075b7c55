"""Secret arguments out of the worker's log, Temporal's failures and task results; the payload
codec (MCP_TASKS_PAYLOAD_KEY) keeping every argument out of the history."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import time
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from mcp_server.runtime.devserver import TemporalDevServer
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.temporal.codec import KEY_ID, PayloadKeyError, key_id
from mcp_server.temporal.connection import connect
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import ConfigError, Settings
from tests.client_2025 import Client2025
from tests.conftest import running_stack
from tests.mcp_client import McpClient

SECRET = "sk-live-7f3a9c"
SHORT = "q7Z"  # below 4 characters: redacted as a whole token only
# Where a task's arguments are, without a codec: its input, and the `mcp-secrets` header of
# the activities it schedules.
INPUT_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
}


def _new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


async def _events(client: Client, task_id: str) -> list[HistoryEvent]:
    return list((await client.get_workflow_handle(task_id).fetch_history()).events)


def _showing(events: list[HistoryEvent], text: str) -> set[int]:
    """The types of the events whose serialized form holds `text`."""
    return {e.event_type for e in events if text.encode() in e.SerializeToString()}


def _failures(events: list[HistoryEvent]) -> list[Failure]:
    """Every failure the history records, with its causes."""
    found = []
    for event in events:
        for attributes in (
            event.activity_task_started_event_attributes.last_failure,
            event.activity_task_failed_event_attributes.failure,
            event.workflow_task_failed_event_attributes.failure,
            event.workflow_execution_failed_event_attributes.failure,
        ):
            failure: Failure | None = attributes
            while failure is not None and failure.ByteSize():
                found.append(failure)
                failure = failure.cause if failure.HasField("cause") else None
    return found


def _formatted(caplog: pytest.LogCaptureFixture, task_id: str, start: str) -> list[str]:
    """Log records of this task that start with `start`, formatted with their tracebacks."""
    return [
        caplog.handler.format(record)
        for record in caplog.records
        if record.getMessage().startswith(start) and task_id in record.getMessage()
    ]


async def test_an_activity_error_naming_the_secret_reaches_neither_the_log_nor_the_history(
    mcp: McpClient, temporal_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="temporalio")
    arguments = {"api_key": SECRET, "mode": "activity_fails"}
    task_id = await mcp.create_task("tests_secret_work", arguments)
    failed = await mcp.wait_terminal(task_id)
    assert failed["status"] == "failed", failed
    assert failed["statusMessage"] == "Task failed: login refused for key [redacted]"
    logged = _formatted(caplog, task_id, "Completing activity as failed")
    assert len(logged) == 2  # both attempts, each with its traceback
    assert all("RuntimeError: login refused for key [redacted]" in line for line in logged)
    assert SECRET not in caplog.text
    events = await _events(temporal_client, task_id)
    assert _showing(events, SECRET) <= INPUT_EVENTS
    messages = [failure.message for failure in _failures(events)]
    # The retried attempt (last_failure), the activity's failure, and the workflow's.
    assert messages.count("login refused for key [redacted]") >= 3, messages


async def test_a_workflow_failure_naming_a_short_secret_shows_it_nowhere(
    mcp: McpClient, temporal_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="temporalio")
    task_id = await mcp.create_task("tests_leaky", {"api_key": SHORT, "fail": True})
    waiting = await mcp.wait_status(task_id, "input_required", within=5)
    assert waiting["statusMessage"] == "Waiting for input"
    assert waiting["inputRequests"]["go"]["params"]["message"] == "Use key [redacted]?"
    description = await temporal_client.get_workflow_handle(task_id).describe()
    assert SHORT not in json.dumps(await description.memo())
    await mcp.update_task(task_id, {"go": {"action": "accept", "content": {"go": True}}})
    failed = await mcp.wait_terminal(task_id)
    assert failed["statusMessage"] == "Task failed: the API refused key [redacted]"
    assert SHORT not in json.dumps(failed)
    failures = _failures(await _events(temporal_client, task_id))
    assert [f.message for f in failures] == ["the API refused key [redacted]"]
    assert not any(SHORT in f.message or SHORT in f.stack_trace for f in failures)
    assert f"key {SHORT}" not in caplog.text


async def test_a_workflow_bug_naming_the_secret_reaches_neither_the_log_nor_the_history(
    mcp: McpClient, temporal_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="temporalio")
    task_id = await mcp.create_task(
        "tests_secret_work", {"api_key": SECRET, "mode": "workflow_bug"}
    )
    deadline = time.monotonic() + 10
    events = await _events(temporal_client, task_id)
    failed_task = EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    while not any(e.event_type == failed_task for e in events):
        assert time.monotonic() < deadline, "the workflow task never failed"
        await asyncio.sleep(0.1)
        events = await _events(temporal_client, task_id)
    try:
        logged = _formatted(caplog, task_id, "Failed activation on workflow TestsSecretWork")
        assert any("RuntimeError: a bug while using key [redacted]" in line for line in logged)
        assert SECRET not in caplog.text
        assert _showing(events, SECRET) <= {EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED}
        (failure,) = _failures(events)
        assert failure.message == "a bug while using key [redacted]"
        assert failure.application_failure_info.type == "RuntimeError"  # still a bug, retried
        assert (await mcp.get_task(task_id)).result["status"] == "working"
    finally:
        await temporal_client.get_workflow_handle(task_id).terminate("test over")


@pytest.mark.parametrize(
    ("secret", "note", "note_shown"),
    [
        (SECRET, f"prefix-{SECRET}-suffix", "prefix-[redacted]-suffix"),
        # A short secret: redacted where it is a whole token, kept inside a longer word.
        (SHORT, f"{SHORT}, a{SHORT}b", "[redacted], aq7Zb"),
    ],
    ids=["long", "short"],
)
async def test_a_completed_result_has_the_secret_redacted(
    mcp: McpClient, secret: str, note: str, note_shown: str
) -> None:
    arguments = {"api_key": secret, "mode": "result", "note": note}
    task_id = await mcp.create_task("tests_secret_work", arguments)
    done = await mcp.wait_terminal(task_id)
    assert done["status"] == "completed", done
    result = done["result"]
    text = f"token for [redacted]; key [redacted] accepted; {note_shown}"
    assert result["content"] == [{"type": "text", "text": text}]
    assert result["structuredContent"] == {
        "key": "[redacted]",
        "token": "token for [redacted]",
        "note": note_shown,
        "answer": {},
    }
    assert done["statusMessage"] == f"Completed: {text}"


# ----- the payload codec -------------------------------------------------------------------


def test_a_bad_payload_key_is_one_line_naming_the_variable_and_never_the_key() -> None:
    short = base64.b64encode(os.urandom(16)).decode()
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"MCP_TASKS_PAYLOAD_KEY": f"{_new_key()},{short}"})
    message = str(caught.value)
    assert message == (
        "MCP_TASKS_PAYLOAD_KEY=<hidden>: key 2 decodes to 16 bytes; AES-256 needs 32"
    )
    with pytest.raises(ConfigError, match=r"^MCP_TASKS_PAYLOAD_KEY=<hidden>: key 1 is not base64$"):
        Settings.from_env({"MCP_TASKS_PAYLOAD_KEY": "not a key"})
    assert Settings.from_env({"MCP_TASKS_PAYLOAD_KEY": ""}).payload_key == ()


async def test_with_a_payload_key_the_history_holds_no_argument_and_tasks_still_work(
    temporal: TemporalDevServer, temporal_client: Client, registry: ToolRegistry, mcp: McpClient
) -> None:
    old_key, new_key = _new_key(), _new_key()
    note, comment = "a plain note 4821", "an answer 9157"
    codec_client = await connect(
        Settings(temporal_address=temporal.address, payload_key=(old_key,))
    )
    # A task written before the key was set is still read, as it is.
    plain = {"api_key": SECRET, "mode": "result", "note": note}
    plain_id = await mcp.create_task("tests_secret_work", plain)
    plain_done = await mcp.wait_terminal(plain_id)
    before = await TemporalTaskStore(codec_client, "unused").get(plain_id)
    assert before is not None and before.result is not None
    assert before.result["structuredContent"] == plain_done["result"]["structuredContent"]
    async with running_stack(codec_client, registry) as stack:
        arguments: dict[str, Any] = {"api_key": SECRET, "mode": "ask", "note": note}
        task_id = await stack.mcp.create_task("tests_secret_work", arguments)
        waiting = await stack.mcp.wait_status(task_id, "input_required")
        assert waiting["inputRequests"]["go"]["params"]["message"] == "Go?"  # memo decrypted
        answer = {"action": "accept", "content": {"comment": comment}}
        await stack.mcp.update_task(task_id, {"go": answer})
        done = await stack.mcp.wait_terminal(task_id)
        failing = {"api_key": SECRET, "mode": "activity_fails"}
        failed_id = await stack.mcp.create_task("tests_secret_work", failing)
        failed = await stack.mcp.wait_terminal(failed_id)
    # Failure messages are encrypted too (encoded attributes), and read back in clear.
    assert failed["statusMessage"] == "Task failed: login refused for key [redacted]"
    assert not _showing(await _events(temporal_client, failed_id), "login refused")
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {
        "key": "[redacted]",
        "token": "token for [redacted]",
        "note": note,
        "answer": answer,
    }
    # Read without the codec: the history and the memo are ciphertext.
    events = await _events(temporal_client, task_id)
    for plaintext in (SECRET, note, comment, "Go?"):
        assert not _showing(events, plaintext), plaintext
    raw = (await temporal_client.get_workflow_handle(task_id).describe()).raw_description
    assert note.encode() not in raw.workflow_execution_info.memo.SerializeToString()
    started = events[0].workflow_execution_started_event_attributes
    assert started.input.payloads[0].metadata[KEY_ID] == key_id(base64.b64decode(old_key)).encode()
    # Rotation: the new key first, the old one after it; old payloads still decrypt.
    rotated = await connect(
        Settings(temporal_address=temporal.address, payload_key=(new_key, old_key))
    )
    snapshot = await TemporalTaskStore(rotated, "unused").get(task_id)
    assert snapshot is not None and snapshot.result is not None
    assert snapshot.result["structuredContent"]["note"] == note
    # A process without the key says which key it lacks, and where to put it.
    for keys, problem in [
        ((new_key,), "which MCP_TASKS_PAYLOAD_KEY does not list"),
        ((), "MCP_TASKS_PAYLOAD_KEY is not set"),
    ]:
        keyless = await connect(Settings(temporal_address=temporal.address, payload_key=keys))
        with pytest.raises(PayloadKeyError, match=problem):
            await TemporalTaskStore(keyless, "unused").get(task_id)
    wrong = await connect(Settings(temporal_address=temporal.address, payload_key=(new_key,)))
    async with running_stack(wrong, registry) as stack:
        error = (await stack.mcp.get_task(task_id)).error
    assert error["code"] == -32603
    assert "which MCP_TASKS_PAYLOAD_KEY does not list" in error["message"]


async def test_a_listing_skips_a_task_whose_memo_another_key_encrypted(
    temporal: TemporalDevServer, registry: ToolRegistry
) -> None:
    """One task written through another server's payload key, in a namespace this server
    shares, must not fail the caller's whole tasks/list (it is skipped and logged); a read of
    that one task still says which key is missing."""
    address = temporal.address
    keyed = await connect(Settings(temporal_address=address, payload_key=(_new_key(),)))
    keyless = await connect(Settings(temporal_address=address))
    async with (
        running_stack(keyed, registry) as other,
        running_stack(keyless, registry) as stack,
    ):
        hidden = await other.mcp.create_task("tests_wait_forever")
        mine = await stack.mcp.create_task("tests_wait_forever")
        legacy = Client2025(stack.http, stack.url)
        await legacy.initialize()
        deadline = time.monotonic() + 10
        while True:  # the visibility store lags a little behind the starts
            listed = await legacy.request("tasks/list")
            assert "error" not in listed.body, listed.body
            ids = [task["taskId"] for task in listed.result["tasks"]]
            if mine in ids or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert mine in ids and hidden not in ids
        error = (await stack.mcp.get_task(hidden)).error
        assert error["code"] == -32603 and "MCP_TASKS_PAYLOAD_KEY" in error["message"]
        await other.mcp.cancel_task(hidden)
        await stack.mcp.cancel_task(mine)
