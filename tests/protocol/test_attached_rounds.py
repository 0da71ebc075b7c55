"""What an attached call answers at 2026-07-28 to a client without the tasks extension: its
task's questions as InputRequiredResult rounds (to a client that declares elicitation), the
follow-up result otherwise, never `isError` while the task runs; and answers the task refuses
(attached/rounds.py, refused_answers.py)."""

from __future__ import annotations

from typing import Any

from itsdangerous import URLSafeSerializer
from jsonschema import Draft202012Validator

from mcp_server.protocol.attached.followup_tools import FOLLOW_UP_SCHEMA
from mcp_server.protocol.core import refused_answers
from mcp_server.protocol.core.refused_answers import MAX_REFUSED
from mcp_server.protocol.frame import errors
from tests.mcp_client import McpClient

ELICITATION: dict[str, Any] = {"elicitation": {}}
APPROVE = {"action": "accept", "content": {"decision": "approve", "reason": "ok"}}
NOT_AN_ANSWER = {"action": "accept", "content": {"decision": "maybe"}}


def task_named_by(request_state: str) -> str:
    """The taskId a round's requestState carries (the payload of a signed token, read here
    without its signature)."""
    payload = URLSafeSerializer(b"unused").load_payload(request_state.rsplit(".", 2)[0].encode())
    task_id: str = payload["k"]
    return task_id


async def ask_approval(mcp: McpClient, message: str) -> dict[str, Any]:
    first = (
        await mcp.call_tool("request_approval", {"message": message}, capabilities=ELICITATION)
    ).result
    assert first["resultType"] == "input_required", first
    return first


async def retry(
    mcp: McpClient, message: str, state: str, responses: dict[str, Any]
) -> dict[str, Any]:
    extra = {"inputResponses": responses, "requestState": state}
    reply = await mcp.call_tool(
        "request_approval", {"message": message}, capabilities=ELICITATION, extra=extra
    )
    return reply.result


async def test_a_running_tasks_question_is_a_round_and_the_answer_finishes_that_task(
    mcp: McpClient,
) -> None:
    first = await ask_approval(mcp, "Round 1?")
    ((key, request),) = first["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Round 1?"
    assert "taskId" not in first
    task_id = task_named_by(first["requestState"])
    done = await retry(mcp, "Round 1?", first["requestState"], {key: APPROVE})
    assert done["resultType"] == "complete" and done["isError"] is False
    assert done["structuredContent"]["decision"] == "approved"
    # The answer went to the task of the first round: it is that task that completed.
    finished = await mcp.wait_status(task_id, "completed", within=10)
    assert finished["result"]["structuredContent"]["decision"] == "approved"


async def test_a_refused_answer_is_asked_again_at_once_saying_what_was_wrong(
    mcp: McpClient,
) -> None:
    first = await ask_approval(mcp, "Round 2?")
    ((key, _),) = first["inputRequests"].items()
    again = await retry(mcp, "Round 2?", first["requestState"], {key: NOT_AN_ANSWER})
    assert again["resultType"] == "input_required"
    message = again["inputRequests"][key]["params"]["message"]
    assert message.startswith("Your previous answer was not accepted: ")
    assert "decision" in message and message.endswith("Round 2?")
    assert task_named_by(again["requestState"]) == task_named_by(first["requestState"])
    done = await retry(mcp, "Round 2?", again["requestState"], {key: APPROVE})
    assert done["structuredContent"]["decision"] == "approved"


async def test_answers_refused_again_and_again_end_in_a_follow_up_naming_the_problem(
    mcp: McpClient,
) -> None:
    current = await ask_approval(mcp, "Round 3?")
    ((key, _),) = current["inputRequests"].items()
    for _ in range(MAX_REFUSED - 1):
        current = await retry(mcp, "Round 3?", current["requestState"], {key: NOT_AN_ANSWER})
        assert current["resultType"] == "input_required"
    ended = await retry(mcp, "Round 3?", current["requestState"], {key: NOT_AN_ANSWER})
    assert ended["resultType"] == "complete" and ended["isError"] is False
    assert ended["structuredContent"]["status"] == "input_required"
    assert "Your answer was not accepted" in ended["content"][0]["text"]
    task_id = ended["structuredContent"]["taskId"]
    assert (await mcp.get_task(task_id)).result["status"] == "input_required"
    await mcp.cancel_task(task_id)


async def test_a_round_state_is_bound_to_its_call(mcp: McpClient) -> None:
    first = await ask_approval(mcp, "Round 4?")
    ((key, _),) = first["inputRequests"].items()
    extra = {"inputResponses": {key: APPROVE}, "requestState": first["requestState"]}
    other = await mcp.call_tool(
        "request_approval", {"message": "Other?"}, capabilities=ELICITATION, extra=extra
    )
    assert other.error["code"] == errors.INVALID_PARAMS
    await mcp.cancel_task(task_named_by(first["requestState"]))


async def test_without_elicitation_the_follow_up_is_no_error_and_matches_the_listed_schema(
    mcp: McpClient,
) -> None:
    reply = await mcp.call_tool("request_approval", {"message": "Nobody?"}, capabilities={})
    result = reply.result
    assert result["resultType"] == "complete" and result["isError"] is False
    follow_up = result["structuredContent"]
    assert follow_up["taskId"] in result["content"][0]["text"]
    assert "Do not call `request_approval` again" in result["content"][0]["text"]
    listed = {tool["name"]: tool for tool in (await mcp.rpc("tools/list", {})).result["tools"]}
    schema = listed["request_approval"]["outputSchema"]
    assert list(Draft202012Validator(schema).iter_errors(follow_up)) == []
    await mcp.cancel_task(follow_up["taskId"])


def test_the_follow_up_schema_types_each_field_once_as_the_tasks_extension_does() -> None:
    """No `["string", "null"]` type arrays: schema-checking clients warn about them."""
    for name, field in FOLLOW_UP_SCHEMA["properties"].items():
        assert not isinstance(field.get("type"), list), name


async def test_task_cancel_on_a_task_that_already_ended_says_so(mcp: McpClient) -> None:
    reply = await mcp.call_tool("request_approval", {"message": "Stop me"}, capabilities={})
    task_id = reply.result["structuredContent"]["taskId"]
    first = (await mcp.call_tool("task_cancel", {"taskId": task_id})).result
    assert first["isError"] is False and "requested" in first["content"][0]["text"]
    await mcp.wait_status(task_id, "cancelled", within=20)
    again = (await mcp.call_tool("task_cancel", {"taskId": task_id})).result
    assert again["isError"] is False, again
    assert again["content"][0]["text"] == (
        f"Task {task_id} had already ended (cancelled): nothing to cancel."
    )
    assert again["structuredContent"] == {"taskId": task_id, "status": "cancelled"}


async def test_a_task_tools_listed_schema_admits_its_own_results_and_a_sync_tools_is_unchanged(
    mcp: McpClient,
) -> None:
    listed = {tool["name"]: tool for tool in (await mcp.rpc("tools/list", {})).result["tools"]}
    schema = listed["request_approval"]["outputSchema"]
    assert schema["type"] == "object" and len(schema["anyOf"]) == 2
    own = {"decision": "approved", "reason": None, "decidedBy": "x", "waitedSeconds": 1.0}
    assert list(Draft202012Validator(schema).iter_errors(own)) == []
    assert list(Draft202012Validator(schema).iter_errors({"decision": "maybe"})) != []
    assert "anyOf" not in listed["echo"]["outputSchema"]


def test_a_question_asked_again_has_a_new_request_id_that_routes_to_the_same_question() -> None:
    first = refused_answers.request_id("mcp-task-ab12", "approve-b")
    again = refused_answers.request_id("mcp-task-ab12", "approve-b", 2)
    assert first != again and first.startswith("mcp-input:")
    assert refused_answers.parse_request_id(first) == ("mcp-task-ab12", "approve-b")
    assert refused_answers.parse_request_id(again) == ("mcp-task-ab12", "approve-b")
    assert refused_answers.parse_request_id("mcp-input:mcp-task-ab12:k:with:colons") == (
        "mcp-task-ab12",
        "k:with:colons",
    )
    assert refused_answers.parse_request_id("mcp-mrtr:xyz") is None
