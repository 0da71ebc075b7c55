"""Both protocol eras on one endpoint: the 2025-11-25 handshake, its sessions and its own task
support, beside 2026-07-28 (real HTTP, real Temporal, a real worker)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcp_server.protocol.frame import errors
from tests.asgi_stack import AsgiStack, reads_of
from tests.client_2025 import Client2025
from tests.conftest import Stack
from tests.mcp_client import McpClient

ACCEPT_CONFIRM = {"action": "accept", "content": {"confirm": True}}


async def _confirm(request: dict[str, Any]) -> dict[str, Any]:
    assert request["method"] == "elicitation/create"
    return ACCEPT_CONFIRM


async def legacy(asgi_stack: AsgiStack | Stack, **kwargs: Any) -> Client2025:
    client = Client2025(asgi_stack.http, asgi_stack.url, **kwargs)
    await client.initialize()
    return client


async def test_initialize_negotiates_2025_11_25_and_mints_a_session(asgi_stack: AsgiStack) -> None:
    client = Client2025(asgi_stack.http, asgi_stack.url)
    result = await client.initialize()
    assert result["protocolVersion"] == "2025-11-25"
    assert result["capabilities"]["tasks"]["requests"]["tools"]["call"] == {}
    assert result["serverInfo"]["name"] == "mcp-tasks-temporal"
    assert client.session_id and client.session_id.isascii()


async def test_an_unknown_version_is_answered_with_the_newest_handshake_version(
    asgi_stack: AsgiStack,
) -> None:
    client = Client2025(asgi_stack.http, asgi_stack.url)
    assert (await client.initialize("2024-01-01"))["protocolVersion"] == "2025-11-25"
    older = Client2025(asgi_stack.http, asgi_stack.url)
    assert (await older.initialize("2025-06-18"))["protocolVersion"] == "2025-06-18"


async def test_ping_list_and_a_synchronous_call_work_in_a_session(asgi_stack: AsgiStack) -> None:
    client = await legacy(asgi_stack)
    assert (await client.request("ping")).result == {}
    assert (await client.request("logging/setLevel", {"level": "info"})).result == {}
    tools = {t["name"]: t for t in (await client.request("tools/list")).result["tools"]}
    assert tools["slow_compute"]["execution"] == {"taskSupport": "optional"}
    assert "execution" not in tools["greet"] and "task_status" in tools
    reply = await client.request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    assert reply.result["content"][0]["text"] == "Hello, Ada!"


async def test_a_request_without_a_session_or_with_a_forged_one_is_refused(
    asgi_stack: AsgiStack,
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
    missing = await asgi_stack.http.post(asgi_stack.url, json=body, headers=headers)
    assert missing.status_code == 400
    forged = await asgi_stack.http.post(
        asgi_stack.url, json=body, headers={**headers, "Mcp-Session-Id": "eyJ2IjoiMSJ9.AAAA"}
    )
    assert forged.status_code == 404


async def test_a_session_is_not_terminated_by_delete_and_keeps_serving(
    asgi_stack: AsgiStack,
) -> None:
    client = await legacy(asgi_stack)
    response = await asgi_stack.http.delete(asgi_stack.url, headers=client.headers())
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert (await client.request("ping")).result == {}


async def test_a_2026_request_is_unaffected_and_initialize_with_meta_is_not_found(
    asgi_mcp: McpClient,
) -> None:
    reply = await asgi_mcp.rpc("initialize", {"protocolVersion": "2025-11-25"})
    assert (reply.status, reply.error["code"]) == (404, errors.METHOD_NOT_FOUND)
    assert (await asgi_mcp.call_tool("greet", {"name": "Bo"})).result["content"][0]["text"] == (
        "Hello, Bo!"
    )


async def test_2026_only_methods_are_not_found_in_a_session(asgi_stack: AsgiStack) -> None:
    client = await legacy(asgi_stack)
    for method in ("server/discover", "tasks/update", "subscriptions/listen"):
        reply = await client.request(method, {})
        assert reply.error["code"] == errors.METHOD_NOT_FOUND


# ----- 2025-11-25 tasks ------------------------------------------------------------------


async def test_a_2025_task_is_created_read_listed_and_its_result_awaited(
    asgi_stack: AsgiStack,
) -> None:
    client = await legacy(asgi_stack)
    created = await client.request(
        "tools/call",
        {"name": "slow_compute", "arguments": {"seconds": 0.5, "label": "old"}, "task": {}},
    )
    task = created.result["task"]
    assert task["status"] == "working" and "ttl" in task and task["pollInterval"] > 0
    got = (await client.request("tasks/get", {"taskId": task["taskId"]})).result
    assert got["taskId"] == task["taskId"] and "ttlMs" not in got
    listed = (await client.request("tasks/list")).result["tasks"]
    assert task["taskId"] in [t["taskId"] for t in listed]
    done = await client.request("tasks/result", {"taskId": task["taskId"]})
    assert "old" in done.result["content"][0]["text"]
    related = done.result["_meta"]["io.modelcontextprotocol/related-task"]
    assert related == {"taskId": task["taskId"]}


async def test_tasks_result_sends_the_question_as_elicitation_and_routes_the_answer(
    stack: Stack,
) -> None:
    client = await legacy(stack, on_request=_confirm)
    created = await client.request(
        "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}, "task": {}}
    )
    task_id = created.result["task"]["taskId"]
    done = await client.request("tasks/result", {"taskId": task_id})
    assert done.result["content"][0]["text"] == "Deleted a.txt"
    (asked,) = [m for m in done.messages if m.get("method") == "elicitation/create"]
    assert asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task_id


async def test_tasks_list_pages_through_the_callers_tasks(asgi_stack: AsgiStack) -> None:
    client = await legacy(asgi_stack)
    created = await client.request(
        "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {}}
    )
    ids = [t["taskId"] for t in (await client.request("tasks/list")).result["tasks"]]
    assert created.result["task"]["taskId"] in ids


async def test_a_2025_cancel_answers_the_cancelled_task(asgi_stack: AsgiStack) -> None:
    client = await legacy(asgi_stack)
    created = await client.request(
        "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}, "task": {}}
    )
    task_id = created.result["task"]["taskId"]
    cancelled = (await client.request("tasks/cancel", {"taskId": task_id})).result
    assert cancelled["status"] == "cancelled" and cancelled["taskId"] == task_id
    missing = await client.request("tasks/get", {"taskId": "mcp-task-" + "0" * 32})
    assert missing.error["code"] == errors.INVALID_PARAMS


async def test_a_2025_cancel_reads_the_task_once(
    asgi_stack: AsgiStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await legacy(asgi_stack)
    created = await client.request(
        "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}, "task": {}}
    )
    task_id = created.result["task"]["taskId"]
    reads = reads_of(asgi_stack, monkeypatch)
    await client.request("tasks/cancel", {"taskId": task_id})
    assert reads == [task_id]  # one store read, one pass through the "not found" limit


# ----- hosts without task support --------------------------------------------------------


async def test_a_host_without_tasks_gets_the_result_and_its_questions_as_elicitations(
    stack: Stack,
) -> None:
    client = await legacy(stack, on_request=_confirm)
    reply = await client.request(
        "tools/call", {"name": "confirm_delete", "arguments": {"filename": "b.txt"}}
    )
    assert reply.result["content"][0]["text"] == "Deleted b.txt"
    assert [m["method"] for m in reply.messages if "id" in m] == ["elicitation/create"]


async def test_progress_is_streamed_from_status_messages_when_asked(asgi_stack: AsgiStack) -> None:
    client = await legacy(asgi_stack)
    reply = await client.request(
        "tools/call",
        {
            "name": "slow_compute",
            "arguments": {"seconds": 0.5, "label": "p"},
            "_meta": {"progressToken": "tok-1"},
        },
    )
    progress = [m for m in reply.messages if m.get("method") == "notifications/progress"]
    assert progress and progress[0]["params"]["progressToken"] == "tok-1"
    assert any("Computing" in m["params"]["message"] for m in progress)
    assert "p" in reply.result["content"][0]["text"]


async def test_the_docs_routes_are_gone(asgi_stack: AsgiStack) -> None:
    for path in ("/docs", "/redoc", "/openapi.json"):
        response = await asgi_stack.http.get(asgi_stack.url.replace("/mcp", path))
        assert response.status_code == 404, path


async def test_every_response_carries_a_request_id(asgi_stack: AsgiStack) -> None:
    response = await asgi_stack.http.get(
        asgi_stack.url.replace("/mcp", "/healthz"), headers={"X-Request-Id": "abc-123"}
    )
    assert response.headers["x-request-id"] == "abc-123"
    fresh = await asgi_stack.http.post(
        asgi_stack.url, content=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert len(fresh.headers["x-request-id"]) == 16


async def test_a_json_only_client_still_gets_a_plain_answer(asgi_stack: AsgiStack) -> None:
    client = await legacy(asgi_stack)
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "slow_compute", "arguments": {"seconds": 0.2}},
    }
    headers = {**client.headers(), "Accept": "application/json"}
    response = await asgi_stack.http.post(asgi_stack.url, json=body, headers=headers)
    assert response.headers["content-type"].startswith("application/json")
    assert isinstance(response.json()["result"]["content"], list)


async def test_a_question_asked_before_the_tool_runs_goes_to_the_client_on_the_call_stream(
    stack: Stack,
) -> None:
    async def teal(request: dict[str, Any]) -> dict[str, Any]:
        assert request["method"] == "elicitation/create" and request["id"].startswith("mcp-")
        return {"action": "accept", "content": {"colour": "teal"}}

    client = await legacy(stack, on_request=teal)
    reply = await client.request("tools/call", {"name": "test_streaming_elicitation"})
    assert reply.result["content"][0]["text"] == "Elicitation answered: accept {'colour': 'teal'}"
    assert "resultType" not in reply.result
    json_only = Client2025(stack.http, stack.url, accept="application/json")
    await json_only.initialize()
    refused = await json_only.request("tools/call", {"name": "test_streaming_elicitation"})
    assert refused.error["code"] == errors.INVALID_REQUEST
    assert "text/event-stream" in refused.error["message"]


async def test_a_sessions_get_stream_relays_the_questions_of_its_own_tasks(
    stack: Stack,
) -> None:
    """For clients that poll tasks/get and never call tasks/result while input is needed."""
    client = await legacy(stack)
    other = await legacy(stack)
    mine = await client.request(
        "tools/call", {"name": "confirm_delete", "arguments": {"filename": "g.txt"}, "task": {}}
    )
    await other.request(
        "tools/call", {"name": "confirm_delete", "arguments": {"filename": "o.txt"}, "task": {}}
    )
    task_id = mine.result["task"]["taskId"]
    headers = {**client.headers(), "Accept": "text/event-stream"}
    asked: list[dict[str, Any]] = []
    async with asyncio.timeout(15):
        async with stack.http.stream("GET", stack.url, headers=headers) as stream:
            assert stream.status_code == 200
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    asked.append(json.loads(line[len("data: ") :]))
                    break
    (request,) = asked
    assert request["method"] == "elicitation/create"
    assert request["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task_id
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": ACCEPT_CONFIRM}
    assert (
        await stack.http.post(stack.url, json=answer, headers=client.headers())
    ).status_code == 202
    done = await client.request("tasks/result", {"taskId": task_id})
    assert done.result["content"][0]["text"] == "Deleted g.txt" and done.messages == []


async def test_a_get_without_a_session_is_405(asgi_stack: AsgiStack) -> None:
    response = await asgi_stack.http.get(asgi_stack.url, headers={"Accept": "text/event-stream"})
    assert response.status_code == 405


async def test_two_sessions_of_one_principal_opened_at_once_are_distinct(
    asgi_stack: AsgiStack,
) -> None:
    first, second = await legacy(asgi_stack), await legacy(asgi_stack)
    assert first.session_id != second.session_id
