"""The attack: a 2025-11-25 client posts a JSON-RPC *response* whose id it made up,
`mcp-input:<taskId>:<key>`, naming a task that is missing or someone else's, as fast as it
likes. It got -32603 and a logged traceback per try, and no rate limit applied. Now it gets the
ordinary "not found" (-32602, the same for missing and foreign), and every such response counts
against the sender's `tasks/update` limit (mcp_server/protocol/v2025/client_responses.py)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_server.protocol.core.relay import input_request_id
from mcp_server.protocol.frame import errors
from mcp_server.runtime.tokens import add_token
from tests.asgi_stack import BASE_URL, AsgiStackFactory
from tests.client_2025 import Client2025
from tests.mcp_client import McpClient

APPROVE = {"action": "accept", "content": {"decision": "approve"}}


async def forge(client: Client2025, task_id: str, key: str = "decision") -> dict[str, Any]:
    """Post a response to a question the server never asked this client; the error it gets."""
    body = {"jsonrpc": "2.0", "id": input_request_id(task_id, key), "result": APPROVE}
    response = await client.http.post(client.url, json=body, headers=client.headers())
    assert response.status_code == 200, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


@pytest.fixture
async def alice_and_bob(
    fresh_asgi_stack: AsgiStackFactory, tmp_path: Path
) -> AsyncIterator[tuple[McpClient, Client2025]]:
    tokens = tmp_path / "tokens.json"
    alice, bob = add_token(tokens, "alice", []), add_token(tokens, "bob", [])
    async with fresh_asgi_stack(auth="tokens", tokens_file=str(tokens)) as stack:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=stack.app),
            base_url=BASE_URL,
            timeout=30,
            headers={"Authorization": f"Bearer {bob}"},
        ) as bob_http:
            owner = McpClient(stack.http, stack.url)
            owner.extra_headers = {"Authorization": f"Bearer {alice}"}
            attacker = Client2025(bob_http, stack.url)
            await attacker.initialize()
            yield owner, attacker


async def test_a_forged_answer_to_a_foreign_or_missing_task_is_an_ordinary_not_found(
    alice_and_bob: tuple[McpClient, Client2025], caplog: pytest.LogCaptureFixture
) -> None:
    owner, attacker = alice_and_bob
    task_id = await owner.create_task("confirm_delete", {"filename": "alices.txt"})
    await owner.wait_status(task_id, "input_required", within=15)
    foreign = await forge(attacker, task_id)
    missing = await forge(attacker, "no-such-task")
    assert foreign["code"] == missing["code"] == errors.INVALID_PARAMS
    assert foreign["message"] == missing["message"] == errors.TASK_NOT_FOUND_MESSAGE
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert (await owner.get_task(task_id)).result["status"] == "input_required"
    await owner.cancel_task(task_id)


async def test_forged_answers_count_against_the_tasks_update_rate_limit(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    async with fresh_asgi_stack(update_burst=2, update_rate_per_minute=1) as stack:
        attacker = Client2025(stack.http, stack.url)
        await attacker.initialize()
        for _ in range(2):
            assert (await forge(attacker, "no-such-task"))["code"] == errors.INVALID_PARAMS
        limited = await forge(attacker, "no-such-task")
        assert limited["code"] == errors.RATE_LIMITED
        assert limited["data"]["retryAfterMs"] > 0
