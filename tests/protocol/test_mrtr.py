"""Multi round-trip requests of tools/call, and their composition with tasks (wire §1.6, §2.2)."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from mcp_server.protocol.frame import errors
from mcp_server.protocol.frame.errors import McpError
from mcp_server.protocol.frame.request_state import PendingRound, RequestStateCodec
from mcp_server.tools.registry import InputRequests, MrtrRound, Tool, ToolCall
from tests.conftest import Stack
from tests.mcp_client import TASKS, TASKS_AND_ELICITATION, McpClient


@pytest.fixture
def mcp(asgi_mcp: McpClient) -> McpClient:
    """In process (tests/asgi_stack.py): input rounds are the protocol layer's."""
    return asgi_mcp


ALICE = {"name": {"action": "accept", "content": {"name": "Alice"}}}
EVERY_INPUT: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}


async def test_input_is_gathered_synchronously_then_the_task_is_created(mcp: McpClient) -> None:
    await gather_then_create(mcp)


async def test_input_rounds_then_a_task_on_the_real_stack(stack: Stack) -> None:
    """The journey end to end once: uvicorn, Temporal and the TestToolWithTask workflow."""
    await gather_then_create(stack.mcp)


async def gather_then_create(mcp: McpClient) -> None:
    first = (await mcp.call_tool("test_tool_with_task")).result
    assert first["resultType"] == "input_required" and "taskId" not in first
    assert first["inputRequests"]["name"]["method"] == "elicitation/create"
    extra = {"inputResponses": ALICE, "requestState": first["requestState"]}
    created = (await mcp.call_tool("test_tool_with_task", extra=extra)).result
    assert created["resultType"] == "task"
    assert "requestState" not in created and "inputRequests" not in created
    done = await mcp.wait_terminal(created["taskId"])
    assert "Alice" in done["result"]["content"][0]["text"]


async def test_a_retry_without_the_answer_asks_again(mcp: McpClient) -> None:
    first = (await mcp.call_tool("test_tool_with_task")).result
    extra = {"inputResponses": {"other": ALICE["name"]}, "requestState": first["requestState"]}
    again = (await mcp.call_tool("test_tool_with_task", extra=extra)).result
    assert again["resultType"] == "input_required" and "name" in again["inputRequests"]


async def test_a_tampered_request_state_is_invalid_params(mcp: McpClient) -> None:
    first = (await mcp.call_tool("test_tool_with_task")).result
    state = first["requestState"]
    forged = f"{state[:12]}{'A' if state[12] != 'A' else 'B'}{state[13:]}"  # in the payload
    reply = await mcp.call_tool(
        "test_tool_with_task", extra={"inputResponses": ALICE, "requestState": forged}
    )
    assert reply.error["code"] == errors.INVALID_PARAMS


async def test_a_request_state_cannot_be_replayed_on_other_arguments(mcp: McpClient) -> None:
    first = (await mcp.call_tool("test_streaming_elicitation")).result
    reply = await mcp.call_tool(
        "test_tool_with_task",
        extra={"inputResponses": ALICE, "requestState": first["requestState"]},
    )
    assert reply.error["code"] == errors.INVALID_PARAMS


async def test_an_elicitation_needs_the_client_to_declare_it(mcp: McpClient) -> None:
    reply = await mcp.call_tool("test_tool_with_task", capabilities=TASKS)
    assert reply.error["code"] == errors.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert reply.error["data"]["requiredCapabilities"] == {"elicitation": {}}


async def test_sampling_without_the_capability_is_32021_naming_sampling(mcp: McpClient) -> None:
    reply = await mcp.call_tool("test_missing_capability", capabilities=TASKS_AND_ELICITATION)
    assert (reply.status, reply.error["code"]) == (400, errors.MISSING_REQUIRED_CLIENT_CAPABILITY)
    assert reply.error["data"]["requiredCapabilities"] == {"sampling": {}}


async def test_a_sync_tool_completes_after_its_mrtr_round(mcp: McpClient) -> None:
    first = (await mcp.call_tool("test_streaming_elicitation")).result
    answer = {"favorite": {"action": "accept", "content": {"colour": "teal"}}}
    extra = {"inputResponses": answer, "requestState": first["requestState"]}
    done = (await mcp.call_tool("test_streaming_elicitation", extra=extra)).result
    assert done["resultType"] == "complete" and "teal" in done["content"][0]["text"]


def test_request_state_expires() -> None:
    now = [1_800_000_000.0]
    codec = RequestStateCodec(b"k" * 32, lifetime_s=60, clock=lambda: now[0])
    token = codec.encode(PendingRound("t", "d", "p", {"a": 1}))
    now[0] += 59
    assert codec.decode(token).answers == {"a": 1}
    now[0] += 2
    with pytest.raises(McpError) as caught:
        codec.decode(token)
    assert caught.value.code == errors.INVALID_PARAMS and "expired" in caught.value.message


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", 5, "!!!.###"])
def test_malformed_request_state_is_invalid_params(token: object) -> None:
    with pytest.raises(McpError) as caught:
        RequestStateCodec(b"k" * 32).decode(token)
    assert caught.value.code == errors.INVALID_PARAMS


def test_a_state_signed_with_another_key_is_rejected() -> None:
    token = RequestStateCodec(b"a" * 32).encode(PendingRound("t", "d", "p", {}))
    with pytest.raises(McpError):
        RequestStateCodec(b"b" * 32).decode(token)


# Several rounds: what round 2 asks depends on round 1's answer (test_input_required_result_*).

MULTI_ROUND = "test_input_required_result_multi_round"


def _accept(**content: object) -> dict[str, object]:
    return {"action": "accept", "content": content}


async def test_round_two_asks_what_round_one_answered_and_round_three_completes(
    mcp: McpClient,
) -> None:
    first = (await mcp.call_tool(MULTI_ROUND)).result
    assert list(first["inputRequests"]) == ["step1"]
    extra = {
        "inputResponses": {"step1": _accept(name="Alice")},
        "requestState": first["requestState"],
    }
    second = (await mcp.call_tool(MULTI_ROUND, extra=extra)).result
    assert second["resultType"] == "input_required" and list(second["inputRequests"]) == ["step2"]
    assert "Alice" in second["inputRequests"]["step2"]["params"]["message"]
    assert second["requestState"] != first["requestState"]
    extra = {
        "inputResponses": {"step2": _accept(color="blue")},
        "requestState": second["requestState"],
    }
    done = (await mcp.call_tool(MULTI_ROUND, extra=extra)).result
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == "Alice's favorite color is blue"


async def test_an_answer_to_a_question_not_yet_asked_is_ignored(mcp: McpClient) -> None:
    first = (await mcp.call_tool(MULTI_ROUND)).result
    extra = {
        "inputResponses": {"step2": _accept(color="blue")},
        "requestState": first["requestState"],
    }
    again = (await mcp.call_tool(MULTI_ROUND, extra=extra)).result
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["step1"]


async def test_an_invalid_answer_in_a_later_round_is_invalid_params(mcp: McpClient) -> None:
    first = (await mcp.call_tool(MULTI_ROUND)).result
    extra = {
        "inputResponses": {"step1": _accept(name="Alice")},
        "requestState": first["requestState"],
    }
    second = (await mcp.call_tool(MULTI_ROUND, extra=extra)).result
    bad = {"inputResponses": {"step2": {"action": "maybe"}}, "requestState": second["requestState"]}
    reply = await mcp.call_tool(MULTI_ROUND, extra=bad)
    assert reply.error["code"] == errors.INVALID_PARAMS


async def test_a_later_rounds_state_is_bound_to_its_tool(mcp: McpClient) -> None:
    first = (await mcp.call_tool(MULTI_ROUND)).result
    extra = {
        "inputResponses": {"step1": _accept(name="Alice")},
        "requestState": first["requestState"],
    }
    second = (await mcp.call_tool(MULTI_ROUND, extra=extra)).result
    replay = {"inputResponses": ALICE, "requestState": second["requestState"]}
    reply = await mcp.call_tool("test_tool_with_task", extra=replay)
    assert reply.error["code"] == errors.INVALID_PARAMS


async def test_a_round_asks_only_through_capabilities_this_request_declares(
    mcp: McpClient,
) -> None:
    sampling_only = await mcp.call_tool(
        "test_input_required_result_capabilities", capabilities={"sampling": {}}
    )
    methods = {r["method"] for r in sampling_only.result["inputRequests"].values()}
    assert methods == {"sampling/createMessage"}
    nothing = await mcp.call_tool("test_input_required_result_capabilities", capabilities={})
    assert nothing.error["code"] == errors.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert nothing.error["data"]["requiredCapabilities"] == {"elicitation": {}}


async def test_answers_to_every_request_of_one_round_complete_the_call(mcp: McpClient) -> None:
    tool = "test_input_required_result_multiple_inputs"
    first = (await mcp.call_tool(tool, capabilities=EVERY_INPUT)).result
    assert set(first["inputRequests"]) == {"user_name", "greeting", "client_roots"}
    answers = {
        "user_name": _accept(name="Alice"),
        "greeting": {"role": "assistant", "content": {"type": "text", "text": "Hi!"}, "model": "m"},
        "client_roots": {"roots": [{"uri": "file:///work"}]},
    }
    extra = {"inputResponses": answers, "requestState": first["requestState"]}
    done = (await mcp.call_tool(tool, extra=extra, capabilities=EVERY_INPUT)).result
    assert done["content"][0]["text"] == "Received name Alice, greeting 'Hi!', roots file:///work"


async def test_a_partial_answer_keeps_the_answered_part_and_asks_the_rest(mcp: McpClient) -> None:
    tool = "test_input_required_result_multiple_inputs"
    first = (await mcp.call_tool(tool, capabilities=EVERY_INPUT)).result
    extra = {
        "inputResponses": {"user_name": _accept(name="Bo")},
        "requestState": first["requestState"],
    }
    second = (await mcp.call_tool(tool, extra=extra, capabilities=EVERY_INPUT)).result
    assert set(second["inputRequests"]) == {"greeting", "client_roots"}
    roots = {
        "client_roots": {"roots": []},
        "greeting": {"role": "assistant", "content": {"type": "text", "text": "Yo"}, "model": "m"},
    }
    extra = {"inputResponses": roots, "requestState": second["requestState"]}
    done = (await mcp.call_tool(tool, extra=extra, capabilities=EVERY_INPUT)).result
    assert "name Bo" in done["content"][0]["text"]


async def test_a_number_as_an_answer_is_invalid_params(mcp: McpClient) -> None:
    reply = await mcp.call_tool(
        "test_input_required_result_elicitation", extra={"inputResponses": {"user_name": 12345}}
    )
    assert reply.error["code"] == errors.INVALID_PARAMS


def test_a_prelude_that_sees_answers_gets_them_with_the_capabilities() -> None:
    seen: list[MrtrRound] = []

    def mrtr(arguments: dict[str, Any], so_far: MrtrRound) -> InputRequests:
        seen.append(so_far)
        return {} if "a" in so_far.answers else {"a": {"method": "roots/list", "params": {}}}

    tool = Tool("t", "d", {"type": "object"}, handler=_never, mrtr=mrtr)
    assert list(tool.still_needed({}, MrtrRound({"roots": {}}, {}))) == ["a"]
    assert tool.still_needed({}, MrtrRound({}, {"a": {"roots": []}})) == {}
    assert seen[0].client_capabilities == {"roots": {}}


def test_a_prelude_of_the_arguments_alone_is_not_asked_twice_for_an_answered_key() -> None:
    both: InputRequests = {"a": {"method": "roots/list"}, "b": {"method": "roots/list"}}
    tool = Tool("t", "d", {"type": "object"}, handler=_never, mrtr=lambda arguments: both)
    assert list(tool.still_needed({}, MrtrRound({}, {"a": {"roots": []}}))) == ["b"]


def test_a_prelude_taking_three_arguments_is_refused_at_registration() -> None:
    def mrtr(a: object, b: object, c: object) -> InputRequests:
        return {}

    with pytest.raises(ValueError, match="mrtr takes"):
        Tool("t", "d", {"type": "object"}, handler=_never, mrtr=mrtr)  # type: ignore[arg-type]


async def _never(call: ToolCall) -> NoReturn:
    raise AssertionError("not called")
