"""What a run carries into the next (mcp_tasks/contracts/carried.py) and a tool's messages
(mcp_tasks/contracts/tool_messages.py): typed in Python, the JSON that runs in flight and
recorded histories hold, unchanged."""

from __future__ import annotations

import json
from typing import Any

from mcp_tasks.contracts.carried import Carried, CarriedSteering
from mcp_tasks.contracts.task_state import SteerMessage, TaskInput, TaskState
from mcp_tasks.contracts.tool_messages import InputResponse, ToolResult
from workflows.results import text_result

TASK = TaskInput("mcp-task-1", "import_records", {}, "2026-12-06T10:00:00.000Z", None, 2000, "o")
STATE = TaskState.initial(TASK, "Importing")

# As a run wrote it before the carried state was typed (TaskWorkflow.continue_as_new).
WRITTEN_BEFORE: dict[str, Any] = {
    "state": STATE.to_memo(),
    "progress": {"columns": ["id"], "total_rows": 10, "offset": 40, "line": 3},
    "cancelMessage": "Cancelled after 2 of 10 rows",
    "issuedKeys": ["approve", "confirm"],
    "answeredBy": {"approve": "digest"},
    "webhooksSent": 2,
    "steering": {
        "count": 2,
        "paused": True,
        "queued": [{"seq": 2, "message": "slower", "by": "alice"}],
    },
    "historyBase": 57,
}


def test_what_an_older_run_carried_reads_whole_and_is_written_back_byte_for_byte() -> None:
    carried = Carried.read(WRITTEN_BEFORE)
    assert carried == Carried(
        state=STATE,
        progress=WRITTEN_BEFORE["progress"],
        cancel_message="Cancelled after 2 of 10 rows",
        issued_keys=("approve", "confirm"),
        answered_by={"approve": "digest"},
        webhooks_sent=2,
        steering=CarriedSteering(2, True, (SteerMessage(2, "slower", "alice"),)),
        history_base=57,
    )
    assert json.dumps(carried.wire()) == json.dumps(WRITTEN_BEFORE)


def test_a_task_never_steered_and_never_notified_carries_neither_key() -> None:
    quiet = dict(WRITTEN_BEFORE)
    del quiet["webhooksSent"], quiet["steering"]
    carried = Carried.read(quiet)
    assert carried is not None and carried.steering is None and carried.webhooks_sent == 0
    assert json.dumps(carried.wire()) == json.dumps(quiet)


def test_a_first_run_carries_nothing_and_a_malformed_key_reads_as_its_default() -> None:
    assert Carried.read({}) is None
    carried = Carried.read({"state": {"v": 99}, "progress": [], "steering": "on"})
    assert carried == Carried()


def test_a_text_result_is_the_call_tool_result_it_always_was() -> None:
    assert text_result("done", structured={"n": 1}).wire() == {
        "resultType": "complete",
        "content": [{"type": "text", "text": "done"}],
        "isError": False,
        "structuredContent": {"n": 1},
    }
    assert text_result("no", is_error=True).wire() == {
        "resultType": "complete",
        "content": [{"type": "text", "text": "no"}],
        "isError": True,
    }


def test_a_call_tool_result_passed_on_keeps_its_keys() -> None:
    passed = {"content": [{"type": "text", "text": "hi"}], "isError": True, "_meta": {"a": 1}}
    assert ToolResult.read(passed).wire() == {"resultType": "complete", **passed}


def test_an_answer_reads_as_an_elicit_result_and_keeps_what_the_client_sent() -> None:
    accepted = InputResponse.read({"action": "accept", "content": {"ok": True}})
    assert accepted.accepted and accepted.content == {"ok": True}
    declined = InputResponse.read({"action": "decline"})
    assert not declined.accepted and declined.action == "decline" and declined.content == {}
    sampled = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
    answer = InputResponse.read(sampled)
    assert answer.action is None and answer.raw == sampled
