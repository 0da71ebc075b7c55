"""The codec endpoint for operators (mcp_server/temporal/codec_server.py), called as Temporal's
Web UI calls a codec server: a payload that Temporal stores encrypted (read from a real
history, as the Web UI reads it) decodes through `POST /codec/decode` with an operator's
credential, from the Web UI's origin, after the browser's preflight; without a credential, with
one lacking the scope, from another origin or for another namespace, it is refused."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload
from temporalio.client import Client

from mcp_server.runtime.devserver import TemporalDevServer, temporal_binary
from mcp_server.runtime.tokens import add_token
from mcp_server.temporal import codec_server
from mcp_server.temporal.codec import EncryptionCodec, data_converter
from tests.conftest import Stack, StackFactory

KEY = base64.b64encode(os.urandom(32)).decode()
UI = "http://127.0.0.1:8233"


@pytest.fixture
def tokens(tmp_path: Path) -> tuple[Path, str, str]:
    path = tmp_path / "tokens.json"
    return path, add_token(path, "ops", ["operator"]), add_token(path, "alice", ["deploy"])


@pytest.fixture
async def codec_stack(
    fresh_stack: StackFactory, tokens: tuple[Path, str, str]
) -> AsyncIterator[Stack]:
    async with fresh_stack(
        auth="tokens", tokens_file=str(tokens[0]), payload_key=(KEY,), temporal_ui_url=UI
    ) as stack:
        yield stack


async def encrypted_history_payload(temporal: TemporalDevServer, plain: Client) -> dict[str, Any]:
    """A workflow input as Temporal stores it with MCP_TASKS_PAYLOAD_KEY set, read from the
    history without the key (what the Web UI receives), in protobuf JSON (what it posts)."""
    encrypting = await Client.connect(temporal.address, data_converter=data_converter([KEY]))
    workflow_id = f"codec-{uuid.uuid4()}"
    handle = await encrypting.start_workflow(
        "NobodyRunsThis", {"api_key": "k-1"}, id=workflow_id, task_queue="nobody-polls"
    )
    try:
        history = await plain.get_workflow_handle(workflow_id).fetch_history()
    finally:
        await handle.terminate()
    started = history.events[0].workflow_execution_started_event_attributes
    stored = started.input.payloads[0]
    assert stored.metadata["encoding"] == b"binary/encrypted"  # ciphertext in Temporal
    assert b"k-1" not in stored.data
    return json_format.MessageToDict(stored)


def web_ui_headers(token: str | None, **extra: str) -> dict[str, str]:
    headers = {"Origin": UI, "Content-Type": "application/json", "X-Namespace": "default"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return {**headers, **extra}


async def test_the_web_ui_decodes_a_stored_payload_and_nobody_else_does(
    codec_stack: Stack,
    temporal: TemporalDevServer,
    temporal_client: Client,
    tokens: tuple[Path, str, str],
) -> None:
    _, operator, alice = tokens
    base = codec_stack.url.replace("/mcp", codec_server.CODEC_PATH)
    http = codec_stack.http
    payload = await encrypted_history_payload(temporal, temporal_client)
    body = json.dumps({"payloads": [payload]})

    # The browser's preflight: no credential, answered for the Web UI's origin only.
    asking = {
        "Origin": UI,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,x-namespace",
    }
    preflight = await http.options(f"{base}/decode", headers=asking)
    assert preflight.status_code == 204, preflight.text
    assert preflight.headers["access-control-allow-origin"] == UI
    assert "x-namespace" in preflight.headers["access-control-allow-headers"]

    decoded = await http.post(f"{base}/decode", content=body, headers=web_ui_headers(operator))
    assert decoded.status_code == 200, decoded.text
    assert decoded.headers["access-control-allow-origin"] == UI
    [clear] = decoded.json()["payloads"]
    assert base64.b64decode(clear["metadata"]["encoding"]) == b"json/plain"
    assert json.loads(base64.b64decode(clear["data"])) == {"api_key": "k-1"}

    # Encoding is the way back: what the Web UI sends when an operator signals a workflow.
    encoded = await http.post(
        f"{base}/encode",
        content=json.dumps({"payloads": [clear]}),
        headers=web_ui_headers(operator),
    )
    assert encoded.status_code == 200, encoded.text
    [sealed] = encoded.json()["payloads"]
    assert base64.b64decode(sealed["metadata"]["encoding"]) == b"binary/encrypted"
    back = json.dumps({"payloads": [sealed]})
    again = await http.post(f"{base}/decode", content=back, headers=web_ui_headers(operator))
    assert again.json()["payloads"] == [clear]

    refusals = [
        (web_ui_headers(None), 401),  # no credential
        (web_ui_headers(alice), codec_server.CODEC_FORBIDDEN),  # no operator scope
        (web_ui_headers(operator, Origin="https://evil.example"), codec_server.CODEC_FORBIDDEN),
        (web_ui_headers(operator, **{"X-Namespace": "billing"}), codec_server.CODEC_FORBIDDEN),
    ]
    for headers, status in refusals:
        refused = await http.post(f"{base}/decode", content=body, headers=headers)
        assert refused.status_code == status, (headers, refused.text)
        assert "k-1" not in refused.text
    evil = await http.options(f"{base}/decode", headers={"Origin": "https://evil.example"})
    assert evil.status_code == codec_server.CODEC_FORBIDDEN
    assert "access-control-allow-origin" not in evil.headers
    malformed = await http.post(
        f"{base}/decode", content=b'{"payloads": "x"}', headers=web_ui_headers(operator)
    )
    assert malformed.status_code == codec_server.CODEC_MALFORMED, malformed.text


async def test_the_temporal_cli_decodes_without_an_origin_and_a_wrong_key_is_named(
    codec_stack: Stack, tokens: tuple[Path, str, str]
) -> None:
    # `temporal workflow show --codec-endpoint ... --codec-auth "Bearer ..."`: no Origin.
    base = codec_stack.url.replace("/mcp", codec_server.CODEC_PATH)
    other = await foreign_payload()
    reply = await codec_stack.http.post(
        f"{base}/decode",
        content=json.dumps({"payloads": [other]}),
        headers={"Authorization": f"Bearer {tokens[1]}", "Content-Type": "application/json"},
    )
    assert reply.status_code == codec_server.CODEC_UNDECODABLE, reply.text
    assert "MCP_TASKS_PAYLOAD_KEY" in reply.json()["message"]


async def test_temporal_workflow_show_decodes_through_the_endpoint(
    codec_stack: Stack, temporal: TemporalDevServer, tokens: tuple[Path, str, str]
) -> None:
    # The real `temporal` CLI, as the security page documents it.
    encrypting = await Client.connect(temporal.address, data_converter=data_converter([KEY]))
    workflow_id = f"codec-cli-{uuid.uuid4()}"
    handle = await encrypting.start_workflow(
        "NobodyRunsThis", {"api_key": "k-1"}, id=workflow_id, task_queue="nobody-polls"
    )
    endpoint = codec_stack.url.replace("/mcp", codec_server.CODEC_PATH)
    show = [
        *(temporal_binary(), "workflow", "show", "--workflow-id", workflow_id),
        *("--address", temporal.address, "--output", "json", "--codec-endpoint", endpoint),
    ]
    try:
        authorized = [*show, "--codec-auth", f"Bearer {tokens[1]}"]
        clear = await asyncio.to_thread(
            subprocess.run, authorized, capture_output=True, text=True, timeout=60
        )
        blind = await asyncio.to_thread(
            subprocess.run, show, capture_output=True, text=True, timeout=60
        )
    finally:
        await handle.terminate()
    assert clear.returncode == 0, clear.stderr
    # The CLI's JSON shows payloads as protobuf JSON: the input's data, in base64.
    input_data = base64.b64encode(b'{"api_key":"k-1"}').decode()
    assert input_data in clear.stdout
    assert input_data not in blind.stdout  # no credential: the endpoint refused, nothing decoded


async def foreign_payload() -> dict[str, Any]:
    """A payload encrypted under a key this deployment does not hold."""
    codec = EncryptionCodec([os.urandom(32)])
    [sealed] = await codec.encode([Payload(metadata={"encoding": b"json/plain"}, data=b"1")])
    return json_format.MessageToDict(sealed)


async def test_without_a_payload_key_there_is_no_codec(fresh_stack: StackFactory) -> None:
    async with fresh_stack() as stack:
        base = stack.url.replace("/mcp", codec_server.CODEC_PATH)
        reply = await stack.http.post(f"{base}/decode", json={"payloads": []})
        assert reply.status_code == codec_server.CODEC_NOT_SERVED, reply.text
