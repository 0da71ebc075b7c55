"""The Streamable HTTP transport and the base protocol, over real HTTP (wire §1)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from mcp_server.protocol.frame import errors
from tests.asgi_stack import AsgiStack
from tests.conftest import Stack
from tests.mcp_client import NO_CAPABILITIES, VERSION, McpClient
from tests.observability.test_readiness import wait_ready_status

META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def raw_post(
    asgi_stack: AsgiStack | Stack, body: Any, headers: dict[str, str] | None = None
) -> Any:
    base = {"Content-Type": "application/json", "MCP-Protocol-Version": VERSION}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await asgi_stack.http.post(
        asgi_stack.url, content=content, headers={**base, **(headers or {})}
    )


async def test_discover_advertises_the_tasks_and_steering_extensions_and_not_the_legacy_slot(
    asgi_mcp: McpClient,
) -> None:
    result = (await asgi_mcp.rpc("server/discover", capabilities=NO_CAPABILITIES)).result
    assert result["supportedVersions"] == [VERSION]
    assert result["capabilities"]["extensions"] == {
        "io.modelcontextprotocol/tasks": {},
        "mcp-tasks-temporal/steering": {},
    }
    assert "tasks" not in result["capabilities"]
    assert result["ttlMs"] > 0 and result["cacheScope"] == "public"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-tasks-temporal"


async def test_tools_list_carries_cache_hints_and_no_execution_field(asgi_mcp: McpClient) -> None:
    result = (await asgi_mcp.rpc("tools/list")).result
    names = [tool["name"] for tool in result["tools"]]
    assert names[0] == "test_logging_tool"  # tools[0] must accept {} (header-validation suite)
    assert {"greet", "slow_compute", "multi_step_job", "echo"} <= set(names)
    assert all("execution" not in tool for tool in result["tools"])
    assert result["ttlMs"] > 0 and result["cacheScope"] == "public"


async def test_a_bad_cursor_is_invalid_params(asgi_mcp: McpClient) -> None:
    reply = await asgi_mcp.rpc("tools/list", {"cursor": "not-a-cursor"})
    assert reply.error["code"] == errors.INVALID_PARAMS


@pytest.mark.parametrize(
    "meta",
    [
        None,
        {"io.modelcontextprotocol/clientCapabilities": {}},
        {"io.modelcontextprotocol/protocolVersion": VERSION},
    ],
    ids=["no-meta", "no-protocol-version", "no-client-capabilities"],
)
async def test_missing_required_meta_is_invalid_params_with_http_400(
    asgi_stack: AsgiStack, meta: dict[str, Any] | None
) -> None:
    params = {} if meta is None else {"_meta": meta}
    body = {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": params}
    response = await raw_post(asgi_stack, body, {"Mcp-Method": "server/discover"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == errors.INVALID_PARAMS
    assert response.json()["id"] == 7


async def test_client_info_is_optional(asgi_stack: AsgiStack) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    response = await raw_post(asgi_stack, body, {"Mcp-Method": "server/discover"})
    assert response.status_code == 200 and response.json()["result"]["resultType"] == "complete"


async def test_an_unsupported_version_is_32022_listing_the_supported_ones(
    asgi_mcp: McpClient,
) -> None:
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    reply = await asgi_mcp.rpc(
        "server/discover", meta=meta, headers={"MCP-Protocol-Version": "2025-11-25"}
    )
    assert reply.status == 400
    assert reply.error["code"] == errors.UNSUPPORTED_PROTOCOL_VERSION
    assert reply.error["data"] == {"supported": [VERSION], "requested": "2025-11-25"}


async def test_a_version_header_that_differs_from_meta_is_a_header_mismatch(
    asgi_mcp: McpClient,
) -> None:
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "v999"}
    reply = await asgi_mcp.rpc("server/discover", meta=meta)
    assert (reply.status, reply.error["code"]) == (400, errors.HEADER_MISMATCH)


@pytest.mark.parametrize(
    "headers",
    [{"Mcp-Method": "prompts/list"}, {"Mcp-Method": "TOOLS/LIST"}, {"MCP-Protocol-Version": ""}],
    ids=["other-method", "wrong-case-value", "empty-version"],
)
async def test_a_wrong_routing_header_is_a_header_mismatch(
    asgi_mcp: McpClient, headers: dict[str, str]
) -> None:
    reply = await asgi_mcp.rpc("tools/list", headers=headers)
    assert (reply.status, reply.error["code"]) == (400, errors.HEADER_MISMATCH)


async def test_a_missing_method_header_is_a_header_mismatch(asgi_stack: AsgiStack) -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": META}}
    response = await raw_post(asgi_stack, body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == errors.HEADER_MISMATCH


async def test_header_names_are_case_insensitive(asgi_mcp: McpClient) -> None:
    reply = await asgi_mcp.call_tool(
        "greet", {"name": "Ada"}, headers={"mcp-method": "tools/call", "MCP-NAME": "greet"}
    )
    assert reply.result["content"][0]["text"] == "Hello, Ada!"


async def test_a_base64_name_header_is_decoded_before_comparing(asgi_mcp: McpClient) -> None:
    encoded = base64.b64encode(b"greet").decode()
    reply = await asgi_mcp.call_tool(
        "greet", {"name": "Ada"}, headers={"Mcp-Name": f"=?base64?{encoded}?="}
    )
    assert reply.result["content"][0]["text"] == "Hello, Ada!"


@pytest.mark.parametrize("value", ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?="])
async def test_invalid_base64_in_a_param_header_is_rejected(
    asgi_mcp: McpClient, value: str
) -> None:
    reply = await asgi_mcp.call_tool(
        "test_header_param", {"region": "Hello"}, headers={"Mcp-Param-Region": value}
    )
    assert (reply.status, reply.error["code"]) == (400, errors.HEADER_MISMATCH)


async def test_a_param_header_must_mirror_its_argument(asgi_mcp: McpClient) -> None:
    missing = await asgi_mcp.call_tool("test_header_param", {"region": "eu-west"})
    assert missing.error["code"] == errors.HEADER_MISMATCH
    ok = await asgi_mcp.call_tool(
        "test_header_param", {"region": "eu-west"}, headers={"Mcp-Param-Region": "eu-west"}
    )
    assert "eu-west" in ok.result["content"][0]["text"]


async def test_a_tasks_method_checks_mcp_name_against_the_task_id(asgi_mcp: McpClient) -> None:
    reply = await asgi_mcp.get_task("mcp-task-abc", headers={"Mcp-Name": "mcp-task-other"})
    assert (reply.status, reply.error["code"]) == (400, errors.HEADER_MISMATCH)


@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "tasks/list",
        "tasks/result",
        "x/y",
    ],
)
async def test_removed_and_unknown_methods_are_not_found_with_404(
    asgi_mcp: McpClient, method: str
) -> None:
    reply = await asgi_mcp.rpc(method, {"taskId": "anything"})
    assert (reply.status, reply.error["code"]) == (404, errors.METHOD_NOT_FOUND)


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
async def test_only_post_is_allowed_on_the_endpoint(asgi_stack: AsgiStack, verb: str) -> None:
    response = await asgi_stack.http.request(verb, asgi_stack.url)
    assert response.status_code == 405 and response.headers["allow"] == "POST"


@pytest.mark.parametrize(
    "headers",
    [{"Host": "evil.example.com"}, {"Origin": "http://evil.example.com"}],
    ids=["foreign-host", "foreign-origin"],
)
async def test_dns_rebinding_is_refused_with_403(
    asgi_stack: AsgiStack, headers: dict[str, str]
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    response = await raw_post(asgi_stack, body, {"Mcp-Method": "server/discover", **headers})
    assert response.status_code == 403


async def test_probes_answer_an_orchestrator_that_sends_the_pod_ip_as_host(
    stack: Stack,
) -> None:
    """Kubernetes' httpGet probes send the pod's IP as Host: the probes answer them, while the
    endpoint, and a probe fetched by a web page (with an Origin), stay behind the Host check."""
    probe_host = {"Host": "10.1.2.3:8000"}
    # The stack's worker may not have polled yet, or a loaded machine may keep Temporal's health
    # check past its 2 s: the Host check is what this test is about, so it starts once ready.
    await wait_ready_status(stack, 200, within=30)
    for probe in ("/healthz", "/readyz"):
        response = await stack.http.get(stack.url.replace("/mcp", probe), headers=probe_host)
        assert response.status_code == 200, (probe, response.text)
        from_page = {**probe_host, "Origin": "http://evil.example.com"}
        response = await stack.http.get(stack.url.replace("/mcp", probe), headers=from_page)
        assert response.status_code == 403
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    response = await raw_post(stack, body, {"Mcp-Method": "server/discover", **probe_host})
    assert response.status_code == 403


async def test_a_loopback_origin_is_accepted(asgi_stack: AsgiStack) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    headers = {"Mcp-Method": "server/discover", "Origin": "http://localhost:3000"}
    assert (await raw_post(asgi_stack, body, headers)).status_code == 200


async def test_malformed_json_is_a_parse_error(asgi_stack: AsgiStack) -> None:
    response = await raw_post(
        asgi_stack, b'{"jsonrpc": "2.0", "id": 1,', {"Mcp-Method": "tools/list"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == errors.PARSE_ERROR
    assert "id" not in response.json()


@pytest.mark.parametrize(
    "body",
    [
        [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}],
        {"jsonrpc": "1.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": None, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        "just a string",
    ],
    ids=[
        "batch",
        "old-jsonrpc",
        "null-id",
        "float-id",
        "client-response",
        "non-string-method",
        "string",
    ],
)
async def test_malformed_envelopes_are_invalid_requests(asgi_stack: AsgiStack, body: Any) -> None:
    response = await raw_post(asgi_stack, body, {"Mcp-Method": "tools/list"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == errors.INVALID_REQUEST


async def test_params_that_are_not_an_object_are_invalid_params(asgi_stack: AsgiStack) -> None:
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": [1, 2]}
    response = await raw_post(asgi_stack, body, {"Mcp-Method": "tools/list"})
    assert response.json()["error"]["code"] == errors.INVALID_PARAMS


async def test_a_notification_is_accepted_with_202_and_no_body(asgi_stack: AsgiStack) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    response = await raw_post(asgi_stack, body, {"Mcp-Method": "notifications/cancelled"})
    assert response.status_code == 202 and response.content == b""


async def test_a_body_over_the_limit_is_refused_with_413_before_parsing(
    asgi_stack: AsgiStack,
) -> None:
    too_big = b"[" + b" " * asgi_stack.settings.max_body_bytes + b"]"
    response = await raw_post(asgi_stack, too_big, {"Mcp-Method": "tools/list"})
    assert response.status_code == 413


async def test_a_non_json_content_type_is_refused_with_415(asgi_stack: AsgiStack) -> None:
    response = await asgi_stack.http.post(
        asgi_stack.url, content=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert response.status_code == 415


async def test_no_session_id_is_ever_minted(asgi_stack: AsgiStack) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    response = await raw_post(
        asgi_stack, body, {"Mcp-Method": "server/discover", "Mcp-Session-Id": "abc"}
    )
    assert response.status_code == 200 and "mcp-session-id" not in response.headers


async def test_healthz_says_the_process_lives_and_readyz_that_the_replica_can_serve(
    stack: Stack,
) -> None:
    response = await stack.http.get(stack.url.replace("/mcp", "/healthz"))
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    ready = await wait_ready_status(stack, 200, within=30)  # Temporal reachable
    assert ready["missing"] == [] and ready["temporal"] == "ok"


async def test_a_tasks_method_without_mcp_name_is_served_as_widely_used_clients_send_it(
    asgi_mcp: McpClient,
) -> None:
    task_id = await asgi_mcp.create_task("slow_compute", {"seconds": 0})
    params = {"taskId": task_id}
    headers = {
        k: v for k, v in asgi_mcp.headers_for("tasks/get", params).items() if k != "Mcp-Name"
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {**params, "_meta": meta}}
    response = await asgi_mcp.http.post(asgi_mcp.url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["taskId"] == task_id
