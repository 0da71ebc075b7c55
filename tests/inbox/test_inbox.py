"""The approval inbox end to end: a real `mcp-tasks dev --auth tokens` process, real MCP calls,
Debian's chromium driven headless (Playwright), plain HTTP for what a browser would not send."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Dialog, expect

from mcp_server.inbox.security import CONTENT_SECURITY_POLICY
from mcp_server.protocol.frame.errors import NOT_AN_APPROVER
from mcp_server.runtime.devserver import free_port
from tests.dev_process import DevProcess, reaped
from tests.inbox_stack import (
    CHROMIUM,
    InboxServer,
    chromium,
    form_fields,
    inbox_server,
    screenshot_path,
    signed_in_page,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    # .ci/run installs it; elsewhere: apt-get install chromium.
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no {CHROMIUM} (Debian's chromium)"),
]

EVERY_FIELD: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "Why this change?",
            "minLength": 3,
            "maxLength": 200,
        },
        "contact": {"type": "string", "format": "email", "title": "Contact"},
        "link": {"type": "string", "format": "uri", "title": "Change ticket"},
        "when": {"type": "string", "format": "date", "title": "Date"},
        "env": {"type": "string", "enum": ["staging", "production"], "default": "staging"},
        "region": {
            "type": "string",
            "oneOf": [
                {"const": "eu", "title": "Europe"},
                {"const": "us", "title": "United States"},
            ],
        },
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1, "title": "Traffic share"},
        "notify": {"type": "boolean", "default": True, "title": "Notify the team"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["db", "api", "web"]}},
    },
    "required": ["reason", "env", "replicas"],
}
HOSTILE = '<script>alert("x")</script><b>bold</b> & "quotes"'


def ask(message: str, schema: dict[str, Any] = EVERY_FIELD) -> dict[str, Any]:
    return {
        "request": {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": schema},
        }
    }


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InboxServer]:
    async with inbox_server(tmp_path_factory.mktemp("inbox")) as running:
        yield running


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


async def waiting_task(server: InboxServer, who: str, message: str) -> str:
    mcp = server.mcp(who)
    task_id = await mcp.create_task("tests_ask", ask(message))
    await mcp.wait_status(task_id, "input_required", within=20)
    return task_id


@asynccontextmanager
async def session(server: InboxServer, who: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A plain HTTP client signed in as `who`, and its CSRF token."""
    async with httpx.AsyncClient(base_url=server.base, timeout=15) as http:
        yield await _signed_in(http, server, who)


async def _signed_in(
    http: httpx.AsyncClient, server: InboxServer, who: str
) -> tuple[httpx.AsyncClient, str]:
    form = await http.get("/inbox/login")
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', form.text)
    assert token is not None
    signed = await http.post(
        "/inbox/login", data={"csrf": token.group(1), "token": server.tokens[who]}
    )
    assert signed.status_code == 303, signed.text
    home = await http.get("/inbox")
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', home.text)
    assert home.status_code == 200 and csrf is not None
    return http, csrf.group(1)


SWITCH = "step 2/2 switch-traffic"


async def release_waiting(server: InboxServer) -> str:
    """alice's deploy of pipelines/release.toml, waiting for release-manager at its 2nd step."""
    alice = server.mcp("alice")
    task_id = await alice.create_task("deploy", {"pipeline": "release"})
    await alice.wait_status(task_id, "input_required", within=30)
    return task_id


async def test_the_approver_approves_the_deploy_in_the_browser(
    server: InboxServer, browser: Browser
) -> None:
    task_id = await release_waiting(server)
    alice = server.mcp("alice")
    (key,) = (await alice.get_task(task_id)).result["inputRequests"]
    approve = {key: {"action": "accept", "content": {"approve": True}}}
    refused = (await alice.update_task(task_id, approve)).error
    assert refused["code"] == NOT_AN_APPROVER and "release-manager" in refused["message"]
    question = {"message": "Rotate the payments API key tonight?", "approvers": ["release-manager"]}
    other = await alice.create_task("request_approval", question)
    await alice.wait_status(other, "input_required", within=30)

    page = await signed_in_page(browser, server, "release-manager")
    row = page.locator(f"tr[data-task='{task_id}']")
    await expect(row).to_be_visible(timeout=20_000)
    # Each row says its own question and the pipeline, not a generic "waiting".
    await expect(row.locator(".question")).to_have_text("Switch production traffic to 1.3.0?")
    await expect(row.locator(".args")).to_have_text("pipeline=release")
    await expect(row.locator(".whose")).to_contain_text("as approver")
    await expect(row.locator(".whose .from")).to_have_text("asked by alice")
    other_row = page.locator(f"tr[data-task='{other}']")
    await expect(other_row.locator(".question")).to_have_text(
        "Rotate the payments API key tonight?", timeout=20_000
    )
    if (where := screenshot_path("inbox.png")) is not None:
        await page.set_viewport_size({"width": 1200, "height": 460})
        await page.screenshot(path=str(where), full_page=True)
        await page.set_viewport_size({"width": 1200, "height": 820})
    await row.locator("a").click()
    await page.wait_for_url(f"{server.base}/inbox/tasks/{task_id}")
    # Which deploy: its pipeline and what the pipeline says it does; the question in words.
    await expect(page.locator(".about")).to_have_text(
        "pipeline=release: Build, then (after the release manager approves) switch traffic"
    )
    await expect(page.locator("article.request h3")).to_have_text("Approve switch traffic")
    # An approval is two buttons that say what they do; no checkbox to forget.
    assert await form_fields(page) == {"f.comment": "text"}
    approve_button = page.locator("form.answer button[value=approve]")
    await expect(approve_button).to_have_text(f"Approve {SWITCH}")
    await expect(page.locator("form.answer button[value=reject]")).to_have_text(f"Reject {SWITCH}")
    assert await page.locator("form.answer input[type=checkbox]").count() == 0
    steps = page.locator("li.step")
    await expect(steps).to_have_count(2)
    await expect(steps.nth(0).locator(".step-name")).to_have_text("build")
    await expect(steps.nth(0).locator(".badge")).to_have_text("succeeded")
    await expect(steps.nth(0).locator(".step-facts")).to_contain_text("exit 0")
    await expect(steps.nth(0).locator("pre.tail")).to_contain_text("built", use_inner_text=False)
    await expect(steps.nth(1).locator(".badge")).to_have_text("waiting")
    await expect(page.locator(".who-list").first).to_contain_text("alice")
    await page.fill("#f\\.comment", "Go ahead, the change window is open.")
    # Enter in the comment decides nothing (only a button does).
    await page.press("#f\\.comment", "Enter")
    await page.wait_for_load_state()
    assert page.url == f"{server.base}/inbox/tasks/{task_id}"
    assert (await alice.get_task(task_id)).result["status"] == "input_required"
    await expect(page.locator("#f\\.comment")).to_have_value("Go ahead, the change window is open.")
    if (where := screenshot_path("inbox-task.png")) is not None:
        await page.screenshot(path=str(where), full_page=True)
    await approve_button.click()
    done = await alice.wait_terminal(task_id, within=30)
    assert done["status"] == "completed" and not done["result"].get("isError"), done
    # The page follows the deploy to its end (server-sent events) and says what was decided,
    # by whom, when, with the comment.
    await expect(page.locator("#live .pill")).to_have_text("completed", timeout=20_000)
    await expect(page.locator("#live .pill")).to_have_class(re.compile(r"\bt-ok\b"))
    await expect(steps.nth(1).locator(".badge")).to_have_text("succeeded")
    decision = page.locator("#live .decision")
    await expect(decision.locator(".verdict")).to_have_text("Approved")
    await expect(decision.locator(".by")).to_have_text("release-manager")
    await expect(decision.locator("time")).to_contain_text("UTC")
    await expect(decision.locator(".comment")).to_have_text("Go ahead, the change window is open.")
    await page.context.close()
    async with session(server, "eve") as (http, _):
        assert (await http.get(f"/inbox/tasks/{task_id}")).status_code == 404


async def test_the_requester_sees_her_question_read_only_with_whose_decision_it_awaits(
    server: InboxServer, browser: Browser
) -> None:
    task_id = await release_waiting(server)
    page = await signed_in_page(browser, server, "alice")
    row = page.locator(f"tr[data-task='{task_id}']")
    await expect(row.locator(".whose")).to_contain_text("awaits release-manager", timeout=20_000)
    await row.locator("a").click()
    await page.wait_for_url(f"{server.base}/inbox/tasks/{task_id}")
    question = page.locator("#forms article.request.others")
    await expect(question.locator(".message")).to_contain_text(
        "Switch production traffic to 1.3.0?"
    )
    await expect(question.locator(".awaits")).to_contain_text(
        "Awaiting the decision of release-manager"
    )
    await expect(question.locator(".choices")).to_contain_text(f"Approve {SWITCH}")
    assert await page.locator("#forms form, #forms button").count() == 0
    await page.context.close()
    await server.mcp("alice").cancel_task(task_id)


async def test_rejecting_a_deploy_asks_first_then_shows_it_declined_not_green(
    server: InboxServer, browser: Browser
) -> None:
    task_id = await release_waiting(server)
    page = await signed_in_page(browser, server, "release-manager")
    await page.goto(f"{server.base}/inbox/tasks/{task_id}")
    await page.fill("#f\\.comment", "Not during the sale.")
    dialogs: list[str] = []

    async def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        await dialog.dismiss()

    page.once("dialog", dismiss)
    await page.click("form.answer button[value=reject]")
    assert dialogs and dialogs[0].startswith(f"Reject {SWITCH}?") and "rolls back" in dialogs[0]
    # Dismissed: nothing was sent.
    assert (await server.mcp("alice").get_task(task_id)).result["status"] == "input_required"
    await expect(page.locator("form.answer")).to_be_visible()

    async def accept(dialog: Dialog) -> None:
        await dialog.accept()

    page.once("dialog", accept)
    await page.click("form.answer button[value=reject]")
    done = await server.mcp("alice").wait_terminal(task_id, within=30)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    pill = page.locator("#live .pill")
    await expect(pill).to_have_text("declined and rolled back", timeout=20_000)
    await expect(pill).to_have_class(re.compile(r"\bt-bad\b"))
    await expect(page.locator("#live .status-line")).to_contain_text("was declined; rolled back")
    await expect(page.locator("li.step").nth(0).locator(".badge")).to_have_text("rolled back")
    decision = page.locator("#live .decision")
    await expect(decision.locator(".verdict")).to_have_text("Rejected")
    await expect(decision.locator(".by")).to_have_text("release-manager")
    await expect(decision.locator(".comment")).to_have_text("Not during the sale.")
    assert await page.locator(".t-ok").count() == 0
    await page.context.close()


async def test_a_request_for_approval_is_a_button_per_decision(
    server: InboxServer, browser: Browser
) -> None:
    question = {"message": "Rotate the signing key?", "approvers": ["release-manager"]}
    task_id = await server.mcp("alice").create_task("request_approval", question)
    await server.mcp("alice").wait_status(task_id, "input_required", within=30)
    page = await signed_in_page(browser, server, "release-manager")
    await page.goto(f"{server.base}/inbox/tasks/{task_id}")
    assert await form_fields(page) == {"f.reason": "text"}
    # A plain approval publishes no steps: no empty Steps card above its question.
    await expect(page.locator("h2", has_text="Steps")).to_have_count(0)
    await expect(page.locator("article.request h3")).to_have_text("Decision")
    buttons = page.locator("form.answer .actions button")
    await expect(buttons).to_have_text(["Approve", "Reject"])
    await page.fill("#f\\.reason", "Wait for the audit.")

    async def accept(dialog: Dialog) -> None:
        await dialog.accept()

    page.once("dialog", accept)
    await page.click("button[value='choose:reject']")
    done = await server.mcp("alice").wait_terminal(task_id, within=30)
    assert done["result"]["structuredContent"]["decision"] == "rejected"
    pill = page.locator("#live .pill")
    await expect(pill).to_have_text("rejected", timeout=20_000)
    await expect(pill).to_have_class(re.compile(r"\bt-bad\b"))
    await expect(page.locator("#live .decision .comment")).to_have_text("Wait for the audit.")
    await page.context.close()


async def test_without_the_script_the_server_asks_before_a_rejection(
    server: InboxServer, browser: Browser
) -> None:
    task_id = await release_waiting(server)
    context = await browser.new_context(java_script_enabled=False)
    page = await context.new_page()
    await page.goto(f"{server.base}/inbox/login")
    await page.fill("#token", server.tokens["release-manager"])
    await page.click("button[type=submit]")
    await page.goto(f"{server.base}/inbox/tasks/{task_id}")
    await page.fill("#f\\.comment", "Roll it back.")
    await page.click("form.answer button[value=reject]")
    confirm = page.locator("#confirm")
    await expect(confirm).to_contain_text(f"Reject {SWITCH}?")
    await expect(confirm.locator(".warn")).to_contain_text("rolls back")
    assert (await server.mcp("alice").get_task(task_id)).result["status"] == "input_required"
    await confirm.locator("a.button").click()  # No, go back
    await page.wait_for_url(f"{server.base}/inbox/tasks/{task_id}")
    await page.fill("#f\\.comment", "Roll it back.")
    await page.click("form.answer button[value=reject]")
    await page.click(f"#confirm button:has-text('Yes, reject {SWITCH}')")
    await page.wait_for_url(f"{server.base}/inbox/tasks/{task_id}")
    done = await server.mcp("alice").wait_terminal(task_id, within=30)
    assert done["result"]["isError"] is True and "declined" in done["result"]["content"][0]["text"]
    await page.reload()
    await expect(page.locator("#live .pill")).to_have_class(re.compile(r"\bt-bad\b"))
    await expect(page.locator("#live .decision .comment")).to_have_text("Roll it back.")
    await context.close()


async def test_owner_answers_every_field_type_in_the_browser(
    server: InboxServer, browser: Browser
) -> None:
    task_id = await waiting_task(server, "alice", f"Confirm the change {HOSTILE}")
    page = await signed_in_page(browser, server, "alice")
    row = page.locator(f"tr[data-task='{task_id}']")
    await expect(row).to_be_visible(timeout=15_000)
    await expect(row.locator(".tool")).to_have_text("tests_ask")
    await row.locator("a").click()
    await page.wait_for_url(f"{server.base}/inbox/tasks/{task_id}")
    # The task's text is shown as text: no element came from it, no script ran.
    message = page.locator("article.request .message")
    await expect(message).to_have_text(f"Confirm the change {HOSTILE}")
    assert await message.locator("b, script").count() == 0
    assert await form_fields(page) == {
        "f.reason": "text",
        "f.contact": "email",
        "f.link": "url",
        "f.when": "date",
        "f.env": "select",
        "f.region": "select",
        "f.replicas": "number",
        "f.ratio": "number",
        "f.notify": "checkbox",
        "f.tags": "select-multiple",
    }
    reason = page.locator("#f\\.reason")
    assert await reason.get_attribute("minlength") == "3"
    assert await reason.get_attribute("required") is not None
    assert await page.locator("#f\\.replicas").input_value() == "3"
    assert await page.locator("#f\\.replicas").get_attribute("max") == "10"
    assert await page.locator("#f\\.notify").is_checked()
    await expect(page.locator("#f\\.region option[value=eu]")).to_have_text("Europe")
    await expect(page.locator(".help").first).to_have_text("Why this change?")
    # The form cannot be sent until its required fields are valid (the server checks again).
    send = page.locator("form.answer button[value=accept]")
    await expect(send).to_be_disabled()
    await page.fill("#f\\.reason", "ab")  # minLength 3
    await expect(send).to_be_disabled()
    await page.fill("#f\\.reason", "hotfix")
    await expect(send).to_be_enabled()
    await page.fill("#f\\.replicas", "")
    await expect(send).to_be_disabled()
    await page.fill("#f\\.contact", "alice@example.com")
    await page.fill("#f\\.when", "2026-12-24")
    await page.select_option("#f\\.env", "production")
    await page.select_option("#f\\.region", "us")
    await page.fill("#f\\.replicas", "5")
    await page.fill("#f\\.ratio", "0.25")
    await expect(send).to_be_enabled()
    await page.uncheck("#f\\.notify")
    await page.select_option("#f\\.tags", ["db", "web"])
    await page.click("button[value=accept]")
    await page.wait_for_url(f"{server.base}/inbox/tasks/{task_id}")
    done = await server.mcp("alice").wait_terminal(task_id, within=20)
    answer = json.loads(done["result"]["content"][0]["text"])
    assert answer == {
        "action": "accept",
        "content": {
            "reason": "hotfix",
            "contact": "alice@example.com",
            "when": "2026-12-24",
            "env": "production",
            "region": "us",
            "replicas": 5,
            "ratio": 0.25,
            "notify": False,
            "tags": ["db", "web"],
        },
    }
    # The open page follows the task (server-sent events): it ends completed without a reload.
    await expect(page.locator("#live .pill")).to_have_text("completed", timeout=15_000)
    await page.context.close()


async def test_the_inbox_pages_through_everything_waiting_oldest_first(
    server: InboxServer, browser: Browser
) -> None:
    """105 newer requests do not push an older one out: it is first, the rest a page away."""
    busy = server.mcp("busy")
    oldest = await busy.create_task("tests_ask", ask("The oldest question"))
    await busy.wait_status(oldest, "input_required", within=20)
    newer = [await busy.create_task("tests_ask", ask(f"Newer {n}")) for n in range(105)]
    for task_id in newer:
        await busy.wait_status(task_id, "input_required", within=60)
    page = await signed_in_page(browser, server, "busy")
    await expect(page.locator("#list .count")).to_have_text("106 waiting", timeout=30_000)
    rows = page.locator("#list tbody tr")
    await expect(rows).to_have_count(50)
    await expect(rows.first).to_have_attribute("data-task", oldest)
    await expect(rows.first.locator(".question")).to_have_text("The oldest question")
    await expect(page.locator(".pager")).to_contain_text("1 to 50 of 106, oldest first")
    seen = [str(await row.get_attribute("data-task")) for row in await rows.all()]
    while await page.locator(".pager a.next").count():
        async with page.expect_navigation():
            await page.click(".pager a.next")
        seen += [str(await row.get_attribute("data-task")) for row in await rows.all()]
    assert sorted(seen) == sorted([oldest, *newer])
    await expect(page.locator(".pager")).to_contain_text("101 to 106 of 106")
    await page.context.close()
    for task_id in [oldest, *newer]:
        await busy.cancel_task(task_id)


async def test_a_step_time_without_a_timezone_does_not_break_the_task_page(
    server: InboxServer, browser: Browser
) -> None:
    alice = server.mcp("alice")
    steps = [
        {
            "name": "build",
            "status": "succeeded",
            "startedAt": "2026-01-01T10:00:00",
            "endedAt": "2026-01-01T10:00:30",
        },
        {"name": "ship", "status": "waiting", "startedAt": "2026-01-01T10:00:30+00:00"},
    ]
    task_id = await alice.create_task("tests_ask", {**ask("Naive times"), "steps": steps})
    await alice.wait_status(task_id, "input_required", within=20)
    page = await signed_in_page(browser, server, "alice")
    response = await page.goto(f"{server.base}/inbox/tasks/{task_id}")
    assert response is not None and response.status == 200
    await expect(page.locator("li.step").nth(0).locator(".step-facts")).to_contain_text("30 s")
    live = await page.request.get(f"{server.base}/inbox/tasks/{task_id}/live")
    assert live.status == 200
    await page.context.close()
    await alice.cancel_task(task_id)


async def test_the_list_updates_without_reload(server: InboxServer, browser: Browser) -> None:
    page = await signed_in_page(browser, server, "alice")
    await expect(page.locator("#list")).to_be_visible()
    before = await page.evaluate("performance.getEntriesByType('navigation').length")
    task_id = await waiting_task(server, "alice", "A new question arrives")
    await expect(page.locator(f"tr[data-task='{task_id}']")).to_be_visible(timeout=20_000)
    assert await page.evaluate("performance.getEntriesByType('navigation').length") == before
    await page.context.close()


async def test_another_principal_sees_nothing(server: InboxServer, browser: Browser) -> None:
    task_id = await waiting_task(server, "alice", "Only for alice")
    page = await signed_in_page(browser, server, "eve")
    await expect(page.locator("#list .empty")).to_be_visible()
    assert await page.locator(f"tr[data-task='{task_id}']").count() == 0
    response = await page.goto(f"{server.base}/inbox/tasks/{task_id}")
    assert response is not None and response.status == 404
    await page.context.close()
    async with session(server, "eve") as (http, csrf):
        for path in (f"/inbox/tasks/{task_id}/live", f"/inbox/events?task={task_id}"):
            assert (await http.get(path)).status_code == 404
        decline = {"csrf": csrf, "key": "question", "action": "decline"}
        refused = await http.post(f"/inbox/tasks/{task_id}/answer", data=decline)
        assert refused.status_code == 404
    assert (await server.mcp("alice").get_task(task_id)).result["status"] == "input_required"


async def test_a_forged_post_is_refused(server: InboxServer) -> None:
    task_id = await waiting_task(server, "alice", "Forgery target")
    async with session(server, "alice") as (http, csrf):
        answer = {"key": "question", "action": "decline"}
        for data in (answer, {**answer, "csrf": "0" * 64}, {**answer, "csrf": ""}):
            forged = await http.post(f"/inbox/tasks/{task_id}/answer", data=data)
            assert forged.status_code == 403
            assert "security token is missing or wrong" in forged.text
    # Without the session cookie, a right token from another session is refused too.
    async with httpx.AsyncClient(base_url=server.base) as stranger:
        stolen = {**answer, "csrf": csrf}
        forged = await stranger.post(f"/inbox/tasks/{task_id}/answer", data=stolen)
        assert forged.status_code == 403
    assert (await server.mcp("alice").get_task(task_id)).result["status"] == "input_required"


async def test_answers_are_checked_as_tasks_update_checks_them(server: InboxServer) -> None:
    task_id = await waiting_task(server, "alice", "Validation")
    async with session(server, "alice") as (http, csrf):
        bad = await http.post(
            f"/inbox/tasks/{task_id}/answer",
            data={
                "csrf": csrf,
                "key": "question",
                "action": "accept",
                "f.reason": "ok",
                "f.env": "staging",
                "f.replicas": "50",
            },
        )
        assert bad.status_code == 400
        assert "inputResponses.question" in bad.text and "replicas" in bad.text
        assert 'role="alert"' in bad.text
    assert (await server.mcp("alice").get_task(task_id)).result["status"] == "input_required"


async def test_headers_cookie_and_sign_in(server: InboxServer) -> None:
    async with httpx.AsyncClient(base_url=server.base) as http:
        login = await http.get("/inbox/login")
        for response in (
            login,
            await http.get("/inbox/static/inbox.js"),
            await http.get("/inbox/tasks/nope"),
        ):
            assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["referrer-policy"] == "no-referrer"
            assert response.headers["cache-control"] == "no-store"
        assert (await http.get("/inbox", follow_redirects=False)).status_code == 303
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', login.text)
        assert token is not None
        wrong = await http.post("/inbox/login", data={"csrf": token.group(1), "token": "nope"})
        assert wrong.status_code == 401 and "unknown bearer token" in wrong.text
        signed = await http.post(
            "/inbox/login", data={"csrf": token.group(1), "token": server.tokens["alice"]}
        )
        cookie = signed.headers["set-cookie"]
        for attribute in ("HttpOnly", "SameSite=Strict", "Path=/inbox", "Max-Age="):
            assert attribute in cookie
        assert "Secure" not in cookie  # plain http on loopback
        value = cookie.split(";")[0]
        # The inbox's cookie is never a credential for /mcp.
        mcp = await http.post("/mcp", json={}, headers={"Cookie": value})
        assert mcp.status_code == 401
        home = await http.get("/inbox")
        assert home.status_code == 200 and "Signed in as <strong>alice</strong>" in home.text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', home.text)
        assert csrf is not None
        out = await http.post("/inbox/logout", data={"csrf": csrf.group(1)})
        assert out.status_code == 303 and out.headers["location"] == "/inbox/login"
        assert "Max-Age=0" in out.headers["set-cookie"]
        assert (await http.get("/inbox")).headers["location"] == "/inbox/login"


async def test_event_streams_end_when_the_server_shuts_down(tmp_path: Path) -> None:
    """SIGTERM: an open inbox stream ends at once, not when the shutdown grace runs out."""
    port = free_port()
    grace = {"MCP_TASKS_HTTP_SHUTDOWN_GRACE_S": "120"}
    dev = DevProcess(tmp_path / "data", port, free_port(), env=grace, toolset="demo")
    with reaped([dev]):
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            await dev.wait_healthy(http)
            await http.get("/inbox")  # auth none: the local user's session cookie
            async with asyncio.timeout(60), http.stream("GET", "/inbox/events") as stream:
                lines = stream.aiter_lines()
                assert await anext(lines) == "retry: 3000"
                dev.process.send_signal(signal.SIGTERM)
                async for _ in lines:  # until the server closes the stream
                    pass
        assert await asyncio.to_thread(dev.process.wait, 60) == 0
    assert "graceful shutdown exceeded" not in dev.log()
