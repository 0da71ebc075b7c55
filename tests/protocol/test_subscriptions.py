"""subscriptions/listen: pushed task updates and tool-list changes (wire §1.9, §2.9)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_server.protocol.frame import errors
from tests.asgi_stack import AsgiStack
from tests.listen_stream import ListenStream, is_final
from tests.mcp_client import NO_CAPABILITIES, McpClient

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
SEQUENCE = "mcp-tasks-temporal/sequence"


async def test_task_updates_are_pushed_until_the_task_is_terminal(asgi_mcp: McpClient) -> None:
    task_id = await asgi_mcp.create_task("slow_compute", {"seconds": 1, "label": "pushed"})
    messages = await asgi_mcp.listen({"taskIds": [task_id]})
    ack, *updates, final = messages
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}
    assert all(m["params"]["_meta"][SUBSCRIPTION_ID] == "listen-1" for m in [ack, *updates])
    assert {m["method"] for m in updates} == {"notifications/tasks"}
    assert "resultType" not in updates[-1]["params"]
    assert updates[-1]["params"]["status"] == "completed"
    assert "pushed" in updates[-1]["params"]["result"]["content"][0]["text"]
    assert final["id"] == "listen-1" and final["result"]["_meta"][SUBSCRIPTION_ID] == "listen-1"
    numbers = [m["params"]["_meta"][SEQUENCE] for m in updates]
    assert all(isinstance(n, int) and n > 0 for n in numbers), numbers
    assert numbers == sorted(numbers) and numbers[-1] > numbers[0], numbers


async def test_unknown_task_ids_are_not_acknowledged(asgi_mcp: McpClient) -> None:
    messages = await asgi_mcp.listen(
        {"taskIds": ["mcp-task-" + "f" * 32], "promptsListChanged": True}
    )
    assert messages[0]["params"]["notifications"] == {}
    assert [m.get("method") for m in messages[1:]] == [None]  # only the final response


async def test_task_ids_without_the_extension_are_32021(asgi_mcp: McpClient) -> None:
    (reply,) = await asgi_mcp.listen({"taskIds": ["x"]}, capabilities=NO_CAPABILITIES)
    assert reply["error"]["code"] == errors.MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_a_missing_filter_is_invalid_params(asgi_mcp: McpClient) -> None:
    reply = await asgi_mcp.rpc("subscriptions/listen", {})
    assert reply.error["code"] == errors.INVALID_PARAMS


async def test_a_tool_list_change_reaches_listeners_that_asked_for_it(mcp: McpClient) -> None:
    async def toggle_twice() -> None:  # add test_dynamic_tool, then remove it again
        await mcp.call_tool("test_trigger_tool_change")
        await mcp.call_tool("test_trigger_tool_change")

    def changed(messages: list[dict[str, Any]]) -> bool:
        return any(m.get("method") == "notifications/tools/list_changed" for m in messages)

    messages = await mcp.listen({"toolsListChanged": True}, on_ack=toggle_twice, until=changed)
    assert messages[0]["params"]["notifications"] == {"toolsListChanged": True}
    assert messages[-1]["params"]["_meta"][SUBSCRIPTION_ID] == "listen-1"
    names = [t["name"] for t in (await mcp.rpc("tools/list")).result["tools"]]
    assert "test_dynamic_tool" not in names


async def test_a_listener_gets_only_what_it_asked_for(asgi_mcp: McpClient) -> None:
    task_id = await asgi_mcp.create_task("slow_compute", {"seconds": 1})

    async def change_tools() -> None:
        await asgi_mcp.call_tool("test_trigger_tool_change")
        await asgi_mcp.call_tool("test_trigger_tool_change")

    messages = await asgi_mcp.listen({"taskIds": [task_id]}, on_ack=change_tools)
    assert {m.get("method") for m in messages[1:-1]} == {"notifications/tasks"}


async def test_a_task_only_listener_does_not_follow_tool_changes(
    asgi_stack: AsgiStack,
) -> None:
    asgi_mcp = asgi_stack.mcp
    task_id = await asgi_mcp.create_task("slow_compute", {"seconds": 1})
    listeners: list[int] = []

    async def change_tools_and_count() -> None:
        listeners.append(asgi_stack.registry.listener_count)  # the stream is open now
        await asgi_mcp.call_tool("test_trigger_tool_change")
        await asgi_mcp.call_tool("test_trigger_tool_change")

    await asgi_mcp.listen({"taskIds": [task_id]}, on_ack=change_tools_and_count)
    assert listeners == [0]


async def test_an_answer_and_a_cancellation_are_pushed_on_one_stream_of_two_tasks(
    mcp: McpClient,
) -> None:
    answered = await mcp.create_task("request_approval", {"message": "Answer me?"})
    cancelled = await mcp.create_task("request_approval", {"message": "Cancel me?"})
    for task_id in (answered, cancelled):
        await mcp.wait_status(task_id, "input_required", within=10)

    def of(task_id: str, status: str) -> Callable[[dict[str, Any]], bool]:
        return lambda m: (
            m.get("method") == "notifications/tasks"
            and m["params"] == {**m["params"], "taskId": task_id, "status": status}
        )

    async with ListenStream(mcp, {"taskIds": [answered, cancelled]}) as stream:
        await stream.next(of(answered, "input_required"))
        await stream.next(of(cancelled, "input_required"))
        approve = {"action": "accept", "content": {"decision": "approve"}}
        await mcp.update_task(answered, {"decision": approve})
        done = await stream.next(of(answered, "completed"))
        assert done["params"]["result"]["structuredContent"]["decision"] == "approved"
        await mcp.cancel_task(cancelled)
        await stream.next(of(cancelled, "cancelled"))
        await stream.next(is_final)  # nothing left to watch: the stream ends
