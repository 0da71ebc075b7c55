"""The inbox on the in-process test stack: with `--auth none` the local user, no sign-in, the
same CSRF check, the list's event stream, and an answer that goes through tasks/update's
rules; with `--auth jwt` a sign-in that lasts no longer than its token."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
from cryptography.hazmat.primitives import serialization

from tests.conftest import Stack, StackFactory
from tests.mcp_client import TASKS, McpClient
from tests.test_security import AUDIENCE, ISSUER, _rsa, mint


def _base(stack: Stack) -> str:
    return stack.url.removesuffix("/mcp")


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found is not None, page
    return found.group(1)


async def test_the_local_user_needs_no_sign_in_and_answers(stack: Stack) -> None:
    task_id = await stack.mcp.create_task("request_approval", {"message": "Ship <it>?"})
    await stack.mcp.wait_status(task_id, "input_required", within=15)
    async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
        assert (await http.get("/inbox/login")).headers["location"] == "/inbox"
        home = await http.get("/inbox")
        assert home.status_code == 200 and "Signed in as <strong>anonymous</strong>" in home.text
        assert "Sign out" not in home.text  # nobody to sign out
        assert "mcp_inbox=" in home.headers["set-cookie"]
        await _listed(http, task_id)
        page = await http.get(f"/inbox/tasks/{task_id}")
        assert "Ship &lt;it&gt;?" in page.text and "<it>" not in page.text
        answer = {"csrf": _csrf(page.text), "key": "decision", "action": "choose:approve"}
        forged = await http.post(f"/inbox/tasks/{task_id}/answer", data={**answer, "csrf": "x"})
        assert forged.status_code == 403
        done = await http.post(f"/inbox/tasks/{task_id}/answer", data=answer)
        assert done.status_code == 303 and done.headers["location"] == f"/inbox/tasks/{task_id}"
    task = await stack.mcp.wait_terminal(task_id, within=15)
    assert task["result"]["structuredContent"]["decision"] == "approved"


async def test_a_question_the_callers_client_cannot_show_is_answered_in_the_inbox(
    stack: Stack,
) -> None:
    """Its caller declared no elicitation: the task is not refused and nothing is lost; it
    waits, the inbox shows the form and answers it (docs/concepts/state-machine.md)."""
    created = await stack.mcp.call_tool(
        "request_approval", {"message": "Ship 7?"}, capabilities=TASKS
    )
    task_id = created.result["taskId"]
    await stack.mcp.wait_status(task_id, "input_required", within=15)
    async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
        assert (await http.get("/inbox")).status_code == 200  # the local user's session
        await _listed(http, task_id)
        page = await http.get(f"/inbox/tasks/{task_id}")
        assert "Ship 7?" in page.text
        answer = {"csrf": _csrf(page.text), "key": "decision", "action": "choose:approve"}
        done = await http.post(f"/inbox/tasks/{task_id}/answer", data=answer)
        assert done.status_code == 303
    task = await stack.mcp.wait_terminal(task_id, within=15)
    assert task["result"]["structuredContent"]["decision"] == "approved"


async def test_the_list_stream_says_what_changed(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
        await http.get("/inbox")  # the session cookie
        async with asyncio.timeout(15), http.stream("GET", "/inbox/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert "default-src 'none'" in stream.headers["content-security-policy"]
            lines = []
            async for line in stream.aiter_lines():
                lines.append(line)
                if line.startswith("data: "):
                    break
        assert lines[0] == "retry: 3000" and "event: list" in lines


async def test_inbox_requests_need_a_same_origin_browser(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
        null = {"Origin": "null"}
        # Origin: null only counts as the inbox's own form with Sec-Fetch-Site: same-origin.
        refused = await http.post("/inbox/logout", headers=null)
        assert refused.status_code == 403 and "Host or Origin" in refused.text
        own = {**null, "Sec-Fetch-Site": "same-origin"}
        refused = await http.post("/inbox/logout", headers=own, data={"csrf": "x"})
        assert refused.status_code == 403 and "security token" in refused.text
        foreign = {"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"}
        for path, headers in (("/inbox/logout", foreign), ("/mcp", own)):
            refused = await http.post(path, headers=headers)
            assert refused.status_code == 403 and "Host or Origin" in refused.text


async def _listed(http: httpx.AsyncClient, task_id: str) -> None:
    deadline = time.monotonic() + 15
    while task_id not in (await http.get("/inbox/fragments/list")).text:
        assert time.monotonic() < deadline, "the task never got listed"
        await asyncio.sleep(0.2)


async def test_a_jwt_signs_in_for_no_longer_than_it_lasts(
    fresh_stack: Callable[..., AbstractAsyncContextManager[Stack]], tmp_path: Path
) -> None:
    key = _rsa()
    public = tmp_path / "public.pem"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    jwt_settings = {
        "jwt_issuer": ISSUER,
        "jwt_audience": AUDIENCE,
        "jwt_public_key_path": str(public),
    }
    async with fresh_stack(auth="jwt", **jwt_settings) as stack:
        alice = McpClient(stack.http, stack.url)
        alice.extra_headers = {"Authorization": f"Bearer {mint(key)}"}
        question = {"message": "Open the gate?", "approvers": ["bob"]}
        task_id = await alice.create_task("request_approval", question)
        await alice.wait_status(task_id, "input_required", within=15)
        async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
            csrf = _csrf((await http.get("/inbox/login")).text)
            stale = mint(key, sub="bob", exp=int(time.time()) - 120)
            refused = await http.post("/inbox/login", data={"csrf": csrf, "token": stale})
            assert refused.status_code == 401 and "token expired" in refused.text
            bob = mint(key, sub="bob", exp=int(time.time()) + 120)
            signed = await http.post("/inbox/login", data={"csrf": csrf, "token": bob})
            assert signed.status_code == 303
            max_age = re.search(r"Max-Age=(\d+)", signed.headers["set-cookie"])
            assert max_age is not None and int(max_age.group(1)) <= 120  # not the 8 h default
            await _listed(http, task_id)
            page = (await http.get(f"/inbox/tasks/{task_id}")).text
            answer = {"csrf": _csrf(page), "key": "decision", "action": "choose:approve"}
            done = await http.post(f"/inbox/tasks/{task_id}/answer", data=answer)
            assert done.status_code == 303
        task = await alice.wait_terminal(task_id, within=15)
        assert task["result"]["structuredContent"]["decidedByName"] == "bob"


async def test_inbox_streams_count_against_the_listen_limits(
    fresh_stack: Callable[..., AbstractAsyncContextManager[Stack]],
) -> None:
    async with fresh_stack(max_listen_streams_per_principal=1) as stack:
        async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
            await http.get("/inbox")
            async with asyncio.timeout(15), http.stream("GET", "/inbox/events") as first:
                lines = first.aiter_lines()  # kept: a dropped iterator closes the stream
                assert await anext(lines) == "retry: 3000"
                second = await http.get("/inbox/events")
                assert second.status_code == 429 and second.headers["retry-after"] == "5"
                assert "subscriptions/listen streams open" in second.text
            # The first stream's slot is free again once the server has seen it closed.
            deadline = time.monotonic() + 15
            while (status := await _stream_status(http)) == 429:
                assert time.monotonic() < deadline, "the closed stream's slot was never freed"
                await asyncio.sleep(0.1)
            assert status == 200


async def _stream_status(http: httpx.AsyncClient, query: str = "") -> int:
    async with asyncio.timeout(15), http.stream("GET", f"/inbox/events{query}") as stream:
        return stream.status_code


async def test_the_list_stream_follows_listed_tasks_with_the_task_watchers(
    fresh_stack: Callable[..., AbstractAsyncContextManager[Stack]],
) -> None:
    """With room for one watcher in the replica, the list stream's watcher (on the oldest
    listed task) leaves none for a task page's stream of a newer task: 429."""
    async with fresh_stack(max_watched_tasks=1) as stack:
        older = await stack.mcp.create_task("request_approval", {"message": "first"})
        newer = await stack.mcp.create_task("request_approval", {"message": "second"})
        for task_id in (older, newer):
            await stack.mcp.wait_status(task_id, "input_required", within=15)
        async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
            await http.get("/inbox")
            await _listed(http, older)
            await _listed(http, newer)
            async with asyncio.timeout(15), http.stream("GET", "/inbox/events") as listing:
                lines = listing.aiter_lines()  # kept: a dropped iterator closes the stream
                while not (await anext(lines)).startswith("data: "):
                    pass  # until the list was read and its oldest task followed
                assert await _stream_status(http, f"?task={newer}") == 429
        for task_id in (older, newer):
            await stack.mcp.cancel_task(task_id)


async def test_the_task_page_links_its_workflow_in_the_teams_web_ui(
    fresh_stack: StackFactory,
) -> None:
    async with fresh_stack(temporal_ui_url="https://temporal.example.com") as stack:
        task_id = await stack.mcp.create_task("request_approval", {"message": "Ship it?"})
        await stack.mcp.wait_status(task_id, "input_required", within=15)
        async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
            await http.get("/inbox")
            page = await http.get(f"/inbox/tasks/{task_id}")
        await stack.mcp.cancel_task(task_id)
    url = f"https://temporal.example.com/namespaces/default/workflows/{task_id}"
    assert f'<a class="web-ui" href="{url}" rel="noopener noreferrer">' in page.text
