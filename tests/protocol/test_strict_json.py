"""Strict JSON at every entry: NaN, Infinity and numbers beyond a float are parse errors, nesting
is bounded before anything reaches Temporal, and what the server encodes again never holds
NaN. Over real HTTP and a real `mcp-tasks stdio` process."""

from __future__ import annotations

import json
import math

import pytest

from mcp_server.protocol.frame import errors
from mcp_server.protocol.frame.request_state import (
    PendingRound,
    RequestStateCodec,
    canonical_digest,
)
from mcp_server.protocol.frame.strict_json import MAX_DEPTH
from tests.asgi_stack import AsgiStack
from tests.mcp_client import VERSION
from tests.stdio.test_stdio import StdioHost, host, meta, stdio_env  # noqa: F401 (fixtures)

TASKS_META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    },
}


async def post_call(
    asgi_stack: AsgiStack, arguments_json: bytes, tool: str
) -> tuple[int, dict[str, object]]:
    """A tools/call whose arguments are the raw JSON text given (which json.dumps cannot
    write when it is not strict JSON)."""
    body = (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"'
        + tool.encode()
        + b'","arguments":'
        + arguments_json
        + b',"_meta":'
        + json.dumps(TASKS_META).encode()
        + b"}}"
    )
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    response = await asgi_stack.http.post(asgi_stack.url, content=body, headers=headers)
    return response.status_code, response.json()


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
async def test_a_non_finite_number_is_a_parse_error_and_creates_no_task(
    asgi_stack: AsgiStack, number: str
) -> None:
    # NaN passed every schema bound: this call used to create a task whose workflow task
    # failed forever (step_seconds NaN), until its 7-day TTL.
    arguments = f'{{"steps":1,"step_seconds":{number}}}'.encode()
    status, payload = await post_call(asgi_stack, arguments, "multi_step_job")
    assert status == 400 and "result" not in payload, payload
    error = payload["error"]
    assert isinstance(error, dict) and error["code"] == errors.PARSE_ERROR
    message = str(error["message"])
    assert number.lstrip("-") in message
    assert "must be finite" in message or "out of range" in message


async def test_arguments_nested_too_deep_are_refused_naming_the_limit(
    asgi_stack: AsgiStack,
) -> None:
    # 476 to 990 levels used to answer HTTP 500 (a recursion error encoding the workflow input).
    deep = b"[" * 600 + b"]" * 600
    status, payload = await post_call(
        asgi_stack, b'{"steps":1,"nested":' + deep + b"}", "multi_step_job"
    )
    assert status == 400, payload
    error = payload["error"]
    assert isinstance(error, dict) and error["code"] == errors.INVALID_PARAMS
    assert str(MAX_DEPTH) in str(error["message"]) and error["data"] == {"maxDepth": MAX_DEPTH}
    # Within the limit (the message, params and arguments are 3 levels of it) it is served.
    fits = b"[" * (MAX_DEPTH - 4) + b"]" * (MAX_DEPTH - 4)
    status, payload = await post_call(asgi_stack, b'{"text":"ok","nested":' + fits + b"}", "echo")
    assert status == 200 and "result" in payload, payload


def test_the_server_never_encodes_nan_again() -> None:
    codec = RequestStateCodec(b"k" * 32)
    pending = PendingRound("tool", "digest", "principal", {"answer": {"content": math.nan}})
    with pytest.raises(ValueError):
        codec.encode(pending)
    with pytest.raises(ValueError):
        canonical_digest({"x": math.inf})


async def test_nan_on_stdin_is_a_parse_error_and_the_connection_goes_on(
    host: StdioHost,  # noqa: F811 (the fixture)
) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": "nan",
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": meta()},
    }
    line = json.dumps(call).replace('"text": "x"', '"text": "x", "n": NaN')
    host.write(line.encode() + b"\n")
    parse_error = await host.next_message()
    assert parse_error["error"]["code"] == errors.PARSE_ERROR and "NaN" in str(parse_error)
    echoed = await host.request(
        "tools/call", {"name": "echo", "arguments": {"text": "still here"}, "_meta": meta()}
    )
    assert echoed.result["content"][0]["text"] == "still here"
