"""Multi round-trip requests of tools/call, and their composition with tasks (wire §1.6, §2.2)."""

from __future__ import annotations

import pytest

from mcp_server.protocol import errors
from mcp_server.protocol.errors import McpError
from mcp_server.protocol.request_state import PendingRound, RequestStateCodec
from tests.mcp_client import TASKS, TASKS_AND_ELICITATION, McpClient

ALICE = {"name": {"action": "accept", "content": {"name": "Alice"}}}


async def test_input_is_gathered_synchronously_then_the_task_is_created(mcp: McpClient) -> None:
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
    body, signature = first["requestState"].split(".")
    forged = f"{body[:-2]}AA.{signature}"
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
    codec = RequestStateCodec(b"k" * 32, lifetime_s=60)
    token = codec.encode(PendingRound("t", "d", "p", {"a": 1}), now=1000.0)
    assert codec.decode(token, now=1059.0).answers == {"a": 1}
    with pytest.raises(McpError) as caught:
        codec.decode(token, now=1061.0)
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
