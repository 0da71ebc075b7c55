"""The approval inbox's pages in process (tests/asgi_stack.py): the app on the in-memory task
and inbox stores, which the contract suites hold to Temporal's
(tests/contract/test_inbox_store_contract.py). The list, a task's page, an answer through its
form and the decision it leaves, for the local user and for signed-in approvers. What needs a
browser or a real server stays in test_inbox.py and test_inbox_local.py."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from mcp_server.runtime.tokens import add_token
from tests.asgi_stack import BASE_URL, AsgiStack, AsgiStackFactory
from tests.mcp_client import McpClient

APPROVE = {"key": "decision", "action": "choose:approve"}


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found is not None, page
    return found.group(1)


@asynccontextmanager
async def browser(stack: AsgiStack) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app with cookies of its own, as one person's browser."""
    transport = httpx.ASGITransport(app=stack.app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL, timeout=15) as http:
        yield http


async def signed_in(http: httpx.AsyncClient, token: str) -> None:
    csrf = _csrf((await http.get("/inbox/login")).text)
    signed = await http.post("/inbox/login", data={"csrf": csrf, "token": token})
    assert signed.status_code == 303, signed.text


async def test_the_local_user_sees_a_waiting_task_answers_it_and_its_decision_stays(
    asgi_stack: AsgiStack,
) -> None:
    mcp = asgi_stack.mcp
    task_id = await mcp.create_task("request_approval", {"message": "Ship <it>?", "ticket": 7})
    await mcp.wait_status(task_id, "input_required", within=5)
    async with browser(asgi_stack) as http:
        home = await http.get("/inbox")
        assert home.status_code == 200 and f"/inbox/tasks/{task_id}" in home.text
        assert "ticket=7" in home.text  # the start arguments' summary (InboxStore.arguments)
        page = await http.get(f"/inbox/tasks/{task_id}")
        assert "Ship &lt;it&gt;?" in page.text and "<it>" not in page.text
        done = await http.post(
            f"/inbox/tasks/{task_id}/answer", data={**APPROVE, "csrf": _csrf(page.text)}
        )
        assert done.status_code == 303
        task = await mcp.wait_terminal(task_id, within=5)
        assert task["result"]["structuredContent"]["decision"] == "approved"
        decided = (await http.get(f"/inbox/tasks/{task_id}")).text
        assert 'class="decision" data-key="decision"' in decided
        assert '<strong class="by">anonymous</strong>' in decided
        assert task_id not in (await http.get("/inbox/fragments/list")).text


async def test_a_task_naming_an_approver_waits_in_their_inbox_and_nobody_elses(
    fresh_asgi_stack: AsgiStackFactory, tmp_path: Path
) -> None:
    tokens_file = tmp_path / "tokens.json"
    tokens = {who: add_token(tokens_file, who, []) for who in ("alice", "bob", "eve")}
    async with fresh_asgi_stack(auth="tokens", tokens_file=str(tokens_file)) as stack:
        alice = McpClient(stack.http, stack.url)
        alice.extra_headers = {"Authorization": f"Bearer {tokens['alice']}"}
        question = {"message": "Open the gate?", "approvers": ["bob"]}
        task_id = await alice.create_task("request_approval", question)
        await alice.wait_status(task_id, "input_required", within=5)
        async with browser(stack) as eve:
            await signed_in(eve, tokens["eve"])
            assert task_id not in (await eve.get("/inbox")).text
            assert (await eve.get(f"/inbox/tasks/{task_id}")).status_code == 404
        async with browser(stack) as bob:
            await signed_in(bob, tokens["bob"])
            assert f"/inbox/tasks/{task_id}" in (await bob.get("/inbox")).text
            page = (await bob.get(f"/inbox/tasks/{task_id}")).text
            done = await bob.post(
                f"/inbox/tasks/{task_id}/answer", data={**APPROVE, "csrf": _csrf(page)}
            )
            assert done.status_code == 303
            await alice.wait_terminal(task_id, within=5)
            decided = (await bob.get(f"/inbox/tasks/{task_id}")).text
            assert '<strong class="by">bob</strong>' in decided


async def test_without_an_inbox_store_the_inbox_says_it_is_unavailable(
    asgi_stack: AsgiStack,
) -> None:
    asgi_stack.app.state.inbox = None
    async with browser(asgi_stack) as http:
        assert (await http.get("/inbox")).status_code == 503
