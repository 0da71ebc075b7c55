"""What the inbox tests run against: a real `mcp-tasks dev --auth tokens` process (the demo
toolset, the asking fixture tool, pipelines/release.toml whose approval gate names approvers),
three principals with tokens, and Debian's chromium driven headless by Playwright."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Browser, Page, async_playwright

from mcp_server.runtime.devserver import free_port
from mcp_server.runtime.tokens import add_token
from tests.dev_process import DevProcess, reaped
from tests.mcp_client import McpClient

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO = Path(__file__).resolve().parent.parent
# Where the browser tests save the README's screenshots (unset: none are taken).
SCREENSHOTS_ENV = "MCP_TASKS_INBOX_SCREENSHOTS"
PRINCIPALS = {"alice": ["deploy"], "release-manager": ["deploy", "release"], "eve": [], "busy": []}


@dataclass
class InboxServer:
    dev: DevProcess
    base: str
    tokens: dict[str, str]
    http: httpx.AsyncClient

    def mcp(self, who: str) -> McpClient:
        client = McpClient(self.http, f"{self.base}/mcp")
        client.extra_headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return client


@asynccontextmanager
async def inbox_server(tmp: Path) -> AsyncIterator[InboxServer]:
    tokens_file = tmp / "tokens.json"
    tokens = {who: add_token(tokens_file, who, scopes) for who, scopes in PRINCIPALS.items()}
    pipelines = tmp / "pipelines"
    pipelines.mkdir()
    # The shipped pipeline: its traffic switch waits for release-manager (or scope release).
    (pipelines / "release.toml").write_text((REPO / "pipelines" / "release.toml").read_text())
    env = {
        "MCP_TASKS_AUTH": "tokens",
        "MCP_TASKS_TOKENS_FILE": str(tokens_file),
        "MCP_TASKS_PIPELINES_DIR": str(pipelines),
        "MCP_TASKS_TOOL_MODULES": "tests.asking_tools",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    port = free_port()
    dev = DevProcess(tmp / "data", port, free_port(), env=env, toolset="demo")
    with reaped([dev]):
        async with httpx.AsyncClient(timeout=30) as http:
            await dev.wait_healthy(http)
            yield InboxServer(dev, f"http://127.0.0.1:{port}", tokens, http)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def signed_in_page(browser: Browser, server: InboxServer, who: str) -> Page:
    """A fresh browser context (its own cookies) signed in to the inbox as `who`."""
    context = await browser.new_context(viewport={"width": 1200, "height": 820})
    page = await context.new_page()
    await page.goto(f"{server.base}/inbox")
    assert page.url.endswith("/inbox/login"), page.url
    await page.fill("#token", server.tokens[who])
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{server.base}/inbox")
    return page


def screenshot_path(name: str) -> Path | None:
    where = os.environ.get(SCREENSHOTS_ENV)
    return Path(where) / name if where else None


async def form_fields(page: Page) -> dict[str, Any]:
    """name -> input type (or select / select-multiple) of the fields of the page's forms."""
    found: dict[str, Any] = await page.eval_on_selector_all(
        "form.answer [name^='f.']",
        "els => Object.fromEntries(els.map(e => [e.name, e.tagName === 'SELECT' ? "
        "(e.multiple ? 'select-multiple' : 'select') : e.type]))",
    )
    return found
