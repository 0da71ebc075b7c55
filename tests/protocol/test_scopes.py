"""Scopes per tool: a tool declares the scopes it needs (the demo's `deploy` needs `deploy`), and
a caller whose credential lacks one gets HTTP 403 with a step-up challenge, in both eras, as a
task or attached, before anything runs. Over real HTTP, tokens and jwt modes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from mcp_server.protocol.frame import errors
from mcp_server.runtime.tokens import add_token
from mcp_server.tools.registry import Tool, ToolCall
from mcp_tasks.contracts.tool_messages import ToolResult
from tests.asgi_stack import AsgiStack, AsgiStackFactory
from tests.auth.test_auth_details import challenge_params
from tests.client_2025 import Client2025
from tests.mcp_client import NO_CAPABILITIES, TASKS
from tests.test_security import as_client, jwt_asgi_stack, mint, signing_key  # noqa: F401 (fixtures)

DEPLOY = {"pipeline": "no-such-pipeline"}


@pytest.fixture
def tokens(tmp_path: Path) -> tuple[Path, str, str]:
    path = tmp_path / "tokens.json"
    return path, add_token(path, "alice", ["deploy"]), add_token(path, "bob", [])


@pytest.fixture
async def token_stack(
    fresh_asgi_stack: AsgiStackFactory, tokens: tuple[Path, str, str]
) -> AsyncIterator[AsgiStack]:
    async with fresh_asgi_stack(auth="tokens", tokens_file=str(tokens[0])) as stack:
        yield stack


def assert_step_up(status: int, headers: httpx.Headers, body: dict[str, Any], scope: str) -> None:
    assert status == 403, body
    challenge = challenge_params(headers["www-authenticate"])
    assert challenge["error"] == "insufficient_scope" and challenge["scope"] == scope
    assert body["error"]["code"] == errors.INVALID_REQUEST
    assert "'deploy' needs scope deploy" in body["error"]["message"]


async def test_a_2026_call_without_the_tools_scope_is_403_as_a_task_and_attached(
    token_stack: AsgiStack, tokens: tuple[Path, str, str]
) -> None:
    bob, alice = as_client(token_stack, tokens[2]), as_client(token_stack, tokens[1])
    for capabilities in (TASKS, NO_CAPABILITIES):  # a task, and the attached run (fallback)
        reply = await bob.call_tool("deploy", DEPLOY, capabilities=capabilities)
        assert_step_up(reply.status, reply.headers, reply.body, "deploy")
        assert reply.body["id"] is not None
    # tools/list still lists it: the 403 is what tells a client which scope to ask for.
    listed = (await bob.rpc("tools/list")).result["tools"]
    assert "deploy" in [tool["name"] for tool in listed]
    # A token holding the scope is served (the task then fails: no such pipeline).
    created = await alice.call_tool("deploy", DEPLOY, capabilities=TASKS)
    assert created.status == 200 and created.result["resultType"] == "task"


class AuthorizedClient2025(Client2025):
    token = ""

    def headers(self) -> dict[str, str]:
        return {**super().headers(), "Authorization": f"Bearer {self.token}"}


async def test_a_2025_call_without_the_tools_scope_is_403_with_or_without_task(
    token_stack: AsgiStack, tokens: tuple[Path, str, str]
) -> None:
    client = AuthorizedClient2025(token_stack.http, token_stack.url)
    client.token = tokens[2]
    await client.initialize()
    extras: list[dict[str, Any]] = [{"task": {}}, {}]
    for extra in extras:
        params = {"name": "deploy", "arguments": DEPLOY, **extra}
        body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
        # Other errors of this era travel with HTTP 200; this one is a 403 the client acts on.
        response = await token_stack.http.post(token_stack.url, json=body, headers=client.headers())
        assert_step_up(response.status_code, response.headers, response.json(), "deploy")
        assert response.json()["id"] == 5


async def test_a_jwt_without_the_tools_scope_gets_a_challenge_to_step_up(
    jwt_asgi_stack: AsgiStack,  # noqa: F811
    signing_key: rsa.RSAPrivateKey,  # noqa: F811
) -> None:
    lacking = as_client(jwt_asgi_stack, mint(signing_key, scope="mcp:tasks"))
    reply = await lacking.call_tool("deploy", DEPLOY, capabilities=TASKS)
    # The scopes every request needs come along, so the new token loses none of them.
    assert_step_up(reply.status, reply.headers, reply.body, "deploy mcp:tasks")
    metadata = challenge_params(reply.headers["www-authenticate"])["resource_metadata"]
    assert metadata.endswith("/.well-known/oauth-protected-resource/mcp")
    holding = as_client(jwt_asgi_stack, mint(signing_key, scope=None, scp=["mcp:tasks", "deploy"]))
    created = await holding.call_tool("deploy", DEPLOY, capabilities=TASKS)
    assert created.status == 200 and created.result["resultType"] == "task"


def test_token_add_takes_scopes_and_refuses_what_is_not_a_scope(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    add_token(path, "carol", ["deploy,tasks", "audit"])
    assert json.loads(path.read_text())["tokens"][0]["scopes"] == ["audit", "deploy", "tasks"]
    with pytest.raises(ValueError, match="not a scope"):
        add_token(path, "dave", ['de"ploy'])
    mcp_tasks = str(Path(sys.executable).parent / "mcp-tasks")
    done = subprocess.run(
        [
            mcp_tasks,
            "token",
            "add",
            "--file",
            str(path),
            "--principal",
            "erin",
            "--scope",
            "deploy",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "scopes: deploy" in done.stdout
    assert json.loads(path.read_text())["tokens"][-1]["scopes"] == ["deploy"]


async def _nothing(call: ToolCall) -> ToolResult:
    return ToolResult([])


def test_a_tool_declares_its_scopes_as_a_set_or_a_list_never_one_string() -> None:
    schema = {"type": "object"}
    listed = Tool("t", "d", schema, handler=_nothing, scopes=["deploy"])  # type: ignore[arg-type]
    assert listed.scopes == frozenset({"deploy"})  # compared with a grant's set, not a list
    with pytest.raises(ValueError, match="not one string"):
        Tool("t", "d", schema, handler=_nothing, scopes="deploy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="visible ASCII"):
        Tool("t", "d", schema, handler=_nothing, scopes=frozenset({"two words"}))
