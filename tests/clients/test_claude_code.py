"""Claude Code (npm `@anthropic-ai/claude-code`, pinned in js/package-lock.json) against the real
server, offline: its model is the scripted Messages API of messages_api.py on 127.0.0.1, which
calls one tool of ours (`mcp__mcp-tasks__<tool>`) and then ends its turns with a text.

In its terminal UI (driven in tmux, terminal.py) Claude Code declares the tasks extension on
every request, so a task tool's call returns a task; it moves the task to the background (the
model is told so and its turn ends), polls tasks/get, shows the task's question as a form,
sends the answer with tasks/update, and once the task is done says so on screen and hands the
result to the model as a notification. Both demo tools that ask are driven that way:
`request_approval` (a choice and a text) and `deploy` at its approval gate (a checkbox and a
text). A question left for later (Esc) waits in Claude Code's task panel, from which `x`
stops the task (tasks/cancel).

In print mode (`claude -p`) it declares no tasks extension: the call runs attached, and the
question that comes back as an InputRequiredResult round is answered `cancel` (nobody is there
to ask), so `request_approval` resolves as `dismissed` and a deploy's gate as declined (the
steps done rolled back).

Claude Code starts with onboarding and the folder's trust marked done in a temporary HOME's
`.claude.json`, the server added with `claude mcp add`, its tools allowed by a permission rule,
and `--permission-mode default` (its default, auto mode, asks a second model before each tool
call, and a first start offers to make it the default).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.clients.messages_api import MessagesApi, Script, messages_api
from tests.clients.node_runner import JS_DIR
from tests.clients.pipelines import gated_pipeline
from tests.clients.terminal import Terminal, terminal
from tests.conftest import Stack

pytestmark = [pytest.mark.clients, pytest.mark.timeout(150)]

CLAUDE = JS_DIR / "node_modules" / ".bin" / "claude"
SERVER = "mcp-tasks"
# Any key: only the scripted API sees it. Claude Code asks whether to use a key it finds in the
# environment ("Detected a custom API key"), unless its last 20 characters are listed as
# approved in .claude.json.
API_KEY = "sk-ant-api03-offline-tests-0123456789abcdefghij"
FORM = "requests your input"
SUBMITS = 3  # Enter on Accept, at most (see answer())
PERMISSION_MODE = ("--permission-mode", "default")
CURSOR = "\u276f"  # the form's cursor, beside the field or button it is on
STARTED = re.compile(r"started server-side task (mcp-task-[0-9a-f]+)")


@dataclass
class Step:
    """Keys pressed, then text typed, then what the form shows once it took them."""

    keys: tuple[str, ...]
    text: str | None
    shows: str


def claude_env(home: Path, project: Path, api: MessagesApi) -> dict[str, str]:
    """A HOME where onboarding, the key and `project`'s trust are done; the environment that
    points Claude Code at the scripted API and at nothing of the caller's (a model provider,
    credentials, the variables of a Claude Code session the tests may run from)."""
    (home / ".claude").mkdir(parents=True)
    state = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {str(project): {"hasTrustDialogAccepted": True}},
    }
    (home / ".claude.json").write_text(json.dumps(state))
    settings = {"permissions": {"allow": [f"mcp__{SERVER}"]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ANTHROPIC_", "CLAUDE", "AWS_", "GOOGLE_", "VERTEX_"))
    }
    return {
        **inherited,
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": API_KEY,
        # MCP tools in the request's `tools`, not behind a tool search the script would drive.
        "ENABLE_TOOL_SEARCH": "false",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


async def claude(env: dict[str, str], cwd: Path, *args: str, within: float = 60) -> str:
    """`claude ARGS` run to its end in `cwd`; its stdout (a failure shows both streams)."""
    if not CLAUDE.exists():
        pytest.fail("Claude Code is missing: run `make client-deps`")
    process = await asyncio.create_subprocess_exec(
        str(CLAUDE),
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), within)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"claude {args} did not end within {within} s") from None
    assert process.returncode == 0, f"claude {args}: exit {process.returncode}\n{out!r}\n{err!r}"
    return out.decode()


async def configured(stack: Stack, tmp_path: Path, api: MessagesApi) -> tuple[dict[str, str], Path]:
    """The environment and project folder of a Claude Code with our server added over HTTP."""
    project = tmp_path / "project"
    project.mkdir()
    env = claude_env(tmp_path / "home", project, api)
    await claude(env, project, "mcp", "add", "--transport", "http", SERVER, stack.url)
    return env, project


async def eventually(found: Callable[[], Any], within: float, what: str) -> Any:
    """The first truthy `found()`, polled; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if value := found():
            return value
        await asyncio.sleep(0.2)
    raise AssertionError(f"no {what} within {within} s")


def started_task(api: MessagesApi) -> str | None:
    """The taskId Claude Code told the model about when it moved the call to the background."""
    result = api.call_result()
    match = STARTED.search(result or "")
    assert result is None or match, f"the call was not moved to the background: {result}"
    return match.group(1) if match else None


def notified(api: MessagesApi, task_id: str) -> bool:
    """Whether the model got the notification of the task's completion."""
    return any(
        "<task-notification>" in text and task_id in text and "<status>completed</status>" in text
        for text in api.last_messages()
    )


@dataclass
class AtTheForm:
    term: Terminal
    api: MessagesApi
    task_id: str


@contextlib.asynccontextmanager
async def at_the_form(
    stack: Stack, tmp_path: Path, tool: str, arguments: dict[str, Any], question: str
) -> AsyncIterator[AtTheForm]:
    """Claude Code in tmux, once its model called `tool`, the task went to the background and
    its question (`question`) is on screen as a form."""
    with messages_api() as api:
        api.script = Script(f"mcp__{SERVER}__{tool}", arguments, "The task is running.")
        env, project = await configured(stack, tmp_path, api)
        async with terminal(tmp_path) as term:
            await term.start([str(CLAUDE), *PERMISSION_MODE], project, env)
            await term.wait_for("? for shortcuts", 60, "the prompt")
            await term.type(f"Please run {tool}.")
            await term.keys("Enter")
            await term.wait_for(
                lambda s: FORM in s and question in s and "1 MCP task still running" in s,
                60,
                "the task in the background and its question as a form",
            )
            task_id = await eventually(lambda: started_task(api), 30, "task started")
            waiting = (await stack.mcp.get_task(task_id)).result
            assert waiting["status"] == "input_required", waiting
            yield AtTheForm(term, api, task_id)


async def answered_in_the_form(
    stack: Stack,
    tmp_path: Path,
    tool: str,
    arguments: dict[str, Any],
    question: str,
    steps: list[Step],
) -> dict[str, Any]:
    """The task's question answered in Claude Code's form by `steps`; the task as tasks/get
    returns it once Claude Code reported it done and told the model."""
    async with at_the_form(stack, tmp_path, tool, arguments, question) as claude_code:
        term, task_id = claude_code.term, claude_code.task_id
        await answer(term, steps)
        try:
            await term.wait_for(f"MCP task {task_id} ({SERVER}/{tool}) completed", 60)
        except AssertionError as error:
            on_server = (await stack.mcp.get_task(task_id)).body
            raise AssertionError(f"{error}\nthe task on the server: {on_server}") from None
        await eventually(lambda: notified(claude_code.api, task_id), 30, "the notification")
        task: dict[str, Any] = await stack.mcp.wait_terminal(task_id)
        return task


async def answer(term: Terminal, steps: list[Step]) -> None:
    """`steps` taken, then Enter on Accept until the form is gone: with two Claude Codes and
    their stacks on two cores, Claude Code ignored about one Enter on Accept in two, with the
    form drawn as ready, and took the next one, as a person would press it again."""
    for step in steps:
        await term.keys(*step.keys)
        if step.text is not None:
            await term.type(step.text)
        await term.wait_for(step.shows, 15)
    for attempt in range(SUBMITS):
        await term.keys("Enter")
        try:
            await term.wait_for(lambda screen: FORM not in screen, 5, "the form closed")
        except AssertionError:
            if attempt == SUBMITS - 1:
                raise
        else:
            return


async def test_claude_code_answers_request_approval_in_its_form_and_reports_the_completion(
    stack: Stack, tmp_path: Path
) -> None:
    task = await answered_in_the_form(
        stack,
        tmp_path,
        "request_approval",
        {"message": "Ship version 1.3.0 to production?"},
        "Ship version 1.3.0 to production?",
        [
            Step(("Right",), None, "◯ reject"),  # the choice's options, unfolded
            Step(("Space",), None, "Decision: ▸ approve"),
            Step(("Down",), "tests are green", "Reason: tests are green"),
            Step(("Down",), None, f"{CURSOR} Accept"),
        ],
    )
    assert task["status"] == "completed", task
    decision = task["result"]["structuredContent"]
    assert decision["decision"] == "approved"
    assert decision["reason"] == "tests are green"


async def test_claude_code_answers_a_deploys_approval_gate_in_its_form(
    stack: Stack, pipelines_dir: Path, tmp_path: Path
) -> None:
    pipeline = gated_pipeline(pipelines_dir)
    task = await answered_in_the_form(
        stack,
        tmp_path,
        "deploy",
        {"pipeline": pipeline},
        "Ship it?",
        [
            Step(("Space",), None, "Approve: ☒"),
            Step(("Down",), "ok to ship", "Comment: ok to ship"),
            Step(("Down",), None, f"{CURSOR} Accept"),
        ],
    )
    assert task["status"] == "completed", task
    assert task["result"]["isError"] is False
    steps = task["result"]["structuredContent"]["steps"]
    assert [(s["name"], s["status"]) for s in steps] == [
        ("build", "succeeded"),
        ("ship", "succeeded"),
    ]


async def in_print_mode(stack: Stack, tmp_path: Path, tool: str, arguments: dict[str, Any]) -> str:
    """`claude -p` whose model calls `tool`: the call's result as the model got it."""
    with messages_api() as api:
        api.script = Script(f"mcp__{SERVER}__{tool}", arguments, "Nobody was asked.")
        env, project = await configured(stack, tmp_path, api)
        out = await claude(env, project, "-p", f"Please run {tool}.", *PERMISSION_MODE)
        assert out.strip() == "Nobody was asked."
        result = api.call_result()
    assert result is not None
    assert not STARTED.search(result), result  # attached: no task in the background
    return result


async def test_claude_code_in_print_mode_cancels_the_question_of_request_approval(
    stack: Stack, tmp_path: Path
) -> None:
    result = await in_print_mode(stack, tmp_path, "request_approval", {"message": "Ship it?"})
    assert json.loads(result)["decision"] == "dismissed"


async def test_claude_code_in_print_mode_cancels_a_deploys_gate_which_rolls_back(
    stack: Stack, pipelines_dir: Path, tmp_path: Path
) -> None:
    pipeline = gated_pipeline(pipelines_dir)
    result = await in_print_mode(stack, tmp_path, "deploy", {"pipeline": pipeline})
    assert result == f'{pipeline}: step 2/2 "ship" was declined; rolled back'


async def test_claude_code_stops_a_task_left_for_later_from_its_task_panel(
    stack: Stack, pipelines_dir: Path, tmp_path: Path
) -> None:
    pipeline = gated_pipeline(pipelines_dir)
    async with at_the_form(stack, tmp_path, "deploy", {"pipeline": pipeline}, "Ship it?") as cc:
        await cc.term.keys("Escape")  # answer later
        await cc.term.wait_for("1 MCP task · needs your input", 15)
        await cc.term.keys("Down")
        await cc.term.wait_for("enter to view tasks", 15)
        await cc.term.keys("Enter")
        await cc.term.wait_for(f"Server task:  {cc.task_id}", 15)
        await cc.term.keys("x")  # to stop
        await cc.term.wait_for("No tasks currently running", 15)
        task = await stack.mcp.wait_terminal(cc.task_id)
    assert task["status"] == "cancelled", task
