"""Hostile input at the real endpoint (property-based, bounded): no crash, no 5xx but a
deliberate 503, the right error code each time, and existing tasks unharmed afterwards. Values
include NaN, Infinity and nesting far past the limit, which json.dumps writes as is."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcp_server.protocol.frame import errors
from mcp_server.tools.registry import ToolRegistry
from tests.asgi_stack import AsgiStack, asgi_running
from tests.mcp_client import McpClient, header_safe

ALLOWED_STATUS = {200, 202, 400, 403, 404, 405, 413, 415, 429, 503}
KNOWN_CODES = {
    errors.PARSE_ERROR,
    errors.INVALID_REQUEST,
    errors.METHOD_NOT_FOUND,
    errors.INVALID_PARAMS,
    errors.HEADER_MISMATCH,
    errors.MISSING_REQUIRED_CLIENT_CAPABILITY,
    errors.UNSUPPORTED_PROTOCOL_VERSION,
    errors.RATE_LIMITED,
    errors.QUOTA_EXCEEDED,
}
METHODS = [
    "server/discover",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "subscriptions/listen",
    "initialize",
    "tasks/list",
]
PARAM_NAMES = [
    "name",
    "arguments",
    "taskId",
    "inputResponses",
    "requestState",
    "cursor",
    "notifications",
    "task",
]
FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# st.floats() draws NaN and +-Infinity too: json.dumps writes them as `NaN`, `Infinity`.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=15,
)


@dataclass(frozen=True)
class Deep:
    """A value nested `depth` levels around `leaf` (JSON text), written out by hand: json.dumps
    itself gives up near 1,000 levels."""

    depth: int
    leaf: str
    as_object: bool

    def text(self) -> str:
        opening, closing = ('{"k":', "}") if self.as_object else ("[", "]")
        return opening * self.depth + self.leaf + closing * self.depth


PLACEHOLDER = "\u0000deep-value"
# From a few levels to far past the limit (476-990 levels used to be an HTTP 500).
deep_values = st.builds(
    Deep,
    st.integers(min_value=1, max_value=1200),
    st.sampled_from(["0", '"x"', "NaN", "Infinity", "-Infinity", "null"]),
    st.booleans(),
)
non_finite = st.sampled_from([math.nan, math.inf, -math.inf])
# What an HTTP header can carry: visible latin-1, spaces inside.
header_values = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=40
).map(str.strip)
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    },
}


@pytest.fixture(scope="module")
async def asgi_stack(registry: ToolRegistry) -> AsyncIterator[AsgiStack]:
    """One in-process stack for the whole module: the bystander outlives the storm."""
    async with asgi_running(registry) as running:
        yield running


# Every test asks for the bystander, so it exists before the first request of the storm and
# test_existing_tasks_are_unharmed (last) checks it after all of them.
pytestmark = pytest.mark.usefixtures("bystander")


@pytest.fixture(scope="module")
async def bystander(asgi_stack: AsgiStack) -> dict[str, Any]:
    """A task waiting for input, created before the storm; checked after it."""
    task_id = await asgi_stack.mcp.create_task("confirm_delete", {"filename": "bystander.txt"})
    return await asgi_stack.mcp.wait_status(task_id, "input_required", within=5)


async def post(asgi_stack: AsgiStack, body: bytes, headers: dict[str, str]) -> None:
    raw = {key: value.encode("latin-1") for key, value in headers.items()}  # bytes go out as-is
    response = await asgi_stack.http.post(
        asgi_stack.url,
        content=body,
        # httpx takes str and bytes values mixed; its HeaderTypes cannot say so.
        headers={"Content-Type": "application/json", **raw},  # type: ignore[arg-type]
    )
    assert response.status_code in ALLOWED_STATUS, (response.status_code, response.text[:300])
    if response.status_code == 202:
        return
    payload = response.json()
    if "error" in payload:
        assert payload["error"]["code"] in KNOWN_CODES, payload
        assert isinstance(payload["error"]["message"], str)
    else:
        assert payload["result"]["resultType"] in {"complete", "task", "input_required"}


@FUZZ
@given(body=st.binary(max_size=3000))
async def test_arbitrary_bytes(asgi_stack: AsgiStack, body: bytes) -> None:
    await post(asgi_stack, body, {"Mcp-Method": "tools/list", "MCP-Protocol-Version": "2026-07-28"})


@FUZZ
@given(message=json_values)
async def test_arbitrary_json(asgi_stack: AsgiStack, message: Any) -> None:
    await post(asgi_stack, json.dumps(message).encode(), {"Mcp-Method": "tools/call"})


@FUZZ
@given(
    method=st.sampled_from(METHODS) | st.text(max_size=20),
    request_id=st.integers() | st.text(max_size=10) | json_values,
    params=st.dictionaries(
        st.sampled_from(
            [
                "name",
                "arguments",
                "taskId",
                "inputResponses",
                "requestState",
                "cursor",
                "notifications",
                "task",
            ]
        ),
        json_values,
        max_size=5,
    ),
    with_meta=st.booleans(),
)
async def test_arbitrary_requests(
    asgi_stack: AsgiStack, method: str, request_id: Any, params: dict[str, Any], with_meta: bool
) -> None:
    if with_meta:
        params = {**params, "_meta": META}
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    headers = {"Mcp-Method": header_safe(method), "MCP-Protocol-Version": "2026-07-28"}
    for key in ("name", "taskId"):
        if isinstance(params.get(key), str):
            headers["Mcp-Name"] = header_safe(params[key])
    if method == "subscriptions/listen":
        return  # streams; covered by test_subscriptions
    await post(asgi_stack, json.dumps(body).encode(), headers)


@FUZZ
@given(
    version=header_values,
    method=header_values,
    name=header_values,
    param=header_values,
)
async def test_odd_headers(
    asgi_stack: AsgiStack, version: str, method: str, name: str, param: str
) -> None:
    params = {"name": "test_header_param", "arguments": {"region": "é"}, "_meta": META}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        "MCP-Protocol-Version": version,
        "Mcp-Method": method,
        "Mcp-Name": name,
        "Mcp-Param-Region": param,
    }
    await post(asgi_stack, json.dumps(body).encode(), headers)


@FUZZ
@given(state=st.text(max_size=200) | st.binary(max_size=100).map(lambda b: b.hex() + "." + b.hex()))
async def test_bogus_request_state(asgi_mcp: McpClient, state: str) -> None:
    extra = {"requestState": state, "inputResponses": {"name": {"action": "accept"}}}
    reply = await asgi_mcp.call_tool("test_tool_with_task", extra=extra)
    assert reply.error["code"] == errors.INVALID_PARAMS


@FUZZ
@given(
    name=st.sampled_from(["Mcp-Method", "MCP-Protocol-Version", "Mcp-Name", "Mcp-Param-Region"]),
    values=st.lists(header_values, min_size=2, max_size=4),
)
async def test_duplicated_headers(asgi_stack: AsgiStack, name: str, values: list[str]) -> None:
    params = {"name": "test_header_param", "arguments": {"region": "eu"}, "_meta": META}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    base = {
        "Mcp-Method": "tools/call",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Name": "test_header_param",
        "Mcp-Param-Region": "eu",
    }
    headers = [(k.encode(), v.encode()) for k, v in base.items() if k != name]
    headers += [(name.encode(), value.encode("latin-1")) for value in values]
    headers.append((b"Content-Type", b"application/json"))
    response = await asgi_stack.http.post(
        asgi_stack.url, content=json.dumps(body).encode(), headers=headers
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == errors.HEADER_MISMATCH


@FUZZ
@given(
    where=st.sampled_from(["arguments", "params", "id", "requestState", "inputResponses"]),
    value=non_finite | deep_values,
)
@example(where="arguments", value=Deep(600, "0", as_object=False))
@example(where="arguments", value=Deep(900, '"x"', as_object=True))
@example(where="arguments", value=math.nan)
async def test_non_finite_and_deep_values_anywhere(
    asgi_stack: AsgiStack, where: str, value: Any
) -> None:
    # A task tool that finishes at once: whatever gets through the checks reaches Temporal.
    params: dict[str, Any] = {"name": "slow_compute", "arguments": {"seconds": 0}, "_meta": META}
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    drawn = PLACEHOLDER if isinstance(value, Deep) else value
    if where == "arguments":
        params["arguments"]["nested"] = drawn
    elif where == "params":
        params["extra"] = drawn
    elif where == "id":
        body["id"] = drawn
    else:
        params[where] = drawn
    headers = {
        "Mcp-Method": "tools/call",
        "Mcp-Name": "slow_compute",
        "MCP-Protocol-Version": "2026-07-28",
    }
    text = json.dumps(body)
    if isinstance(value, Deep):
        text = text.replace(json.dumps(PLACEHOLDER), value.text())
    await post(asgi_stack, text.encode(), headers)


@pytest.mark.parametrize("depth", [100, 5_000, 200_000])
async def test_deep_nesting(asgi_stack: AsgiStack, depth: int) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":'
        + b"[" * depth
        + b"]" * depth
        + b"}"
    )
    await post(asgi_stack, body, {"Mcp-Method": "tools/list", "MCP-Protocol-Version": "2026-07-28"})


@pytest.mark.parametrize(
    "number", [b"1e999", b"-1e999", b"9" * 5000, b"123456789012345678901234567890"]
)
async def test_huge_numbers(asgi_stack: AsgiStack, number: bytes) -> None:
    body = b'{"jsonrpc":"2.0","id":' + number + b',"method":"tools/list","params":{}}'
    await post(asgi_stack, body, {"Mcp-Method": "tools/list", "MCP-Protocol-Version": "2026-07-28"})


async def test_existing_tasks_are_unharmed(asgi_mcp: McpClient, bystander: dict[str, Any]) -> None:
    task_id = bystander["taskId"]
    after = (await asgi_mcp.get_task(task_id)).result
    assert (
        after["status"] == "input_required" and after["inputRequests"] == bystander["inputRequests"]
    )
    await asgi_mcp.update_task(
        task_id, {"confirm": {"action": "accept", "content": {"confirm": True}}}
    )
    done = await asgi_mcp.wait_terminal(task_id)
    assert done["result"]["content"][0]["text"] == "Deleted bystander.txt"
