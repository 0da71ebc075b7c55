"""What "runs" the tasks of the in-memory store: one small script per workflow name, for the
handful of fixture tools the protocol tests call. A script gets a `Run` and does what the
Temporal workflow of the same name does: ask and wait for the answer, report, complete, fail.

A workflow name without a script is a task no worker ever picks up: it stays `working`, as it
would on Temporal with no worker for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mcp_server.tasks.errors import TaskFailure
from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import InputRequest, InputResponse, ToolResult
from workflows.request_approval import DECISIONS
from workflows.results import text_result
from workflows.task_workflow import FormProperty, elicitation


class ScriptFailed(Exception):
    """A script's way to fail its task with a JSON-RPC error object (a protocol error)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error = TaskFailure(message, code, data)


class Run(Protocol):
    """What a script may do with its task."""

    async def ask_all(
        self,
        requests: dict[str, InputRequest],
        status_message: str,
        approvers: list[str] | None = None,
    ) -> dict[str, InputResponse]: ...
    def report(self, message: str) -> None: ...


Script = Callable[[TaskInput, Run], Awaitable[ToolResult]]


async def _greet_from_prelude(task: TaskInput, run: Run) -> ToolResult:
    answer = InputResponse.read(task.prelude_responses.get("name"))
    name = str(answer.content.get("name", "stranger"))
    run.report(f"Greeting {name}")
    return text_result(f"Hello, {name}! This greeting ran as a durable task.")


async def _confirm_delete(task: TaskInput, run: Run) -> ToolResult:
    filename = str(task.arguments["filename"])
    question = elicitation(
        f"Delete {filename}?",
        {"confirm": {"type": "boolean", "title": f"Delete {filename}"}},
        ["confirm"],
    )
    answers = await run.ask_all(
        {"confirm": question}, f"Waiting for confirmation to delete {filename}"
    )
    answer = answers["confirm"]
    if answer.accepted and answer.content.get("confirm") is True:
        return text_result(f"Deleted {filename}", structured={"deleted": True})
    return text_result(
        f"Kept {filename}: deletion was not confirmed", structured={"deleted": False}
    )


async def _multi_input(task: TaskInput, run: Run) -> ToolResult:
    answers = await run.ask_all(
        {
            "name": elicitation("What is your name?", {"name": {"type": "string"}}, ["name"]),
            "confirm": elicitation(
                "Do you confirm?", {"confirm": {"type": "boolean"}}, ["confirm"]
            ),
        },
        "Waiting for two answers",
    )
    summary = ", ".join(
        f"{key}: {answer.action} {answer.raw.get('content')}" for key, answer in answers.items()
    )
    return text_result(f"Received both inputs ({summary})")


async def _request_approval(task: TaskInput, run: Run) -> ToolResult:
    """RequestApproval's question and outcome, without its deadline and its reason rule."""
    properties: dict[str, FormProperty] = {
        "decision": {"type": "string", "title": "Decision", "enum": list(DECISIONS)},
        "reason": {"type": "string", "title": "Reason", "maxLength": 2000},
    }
    question = elicitation(str(task.arguments["message"]), properties, ["decision"])
    approvers = task.arguments.get("approvers")
    answers = await run.ask_all(
        {"decision": question},
        "Waiting for a decision",
        approvers=[str(name) for name in approvers] if approvers else None,
    )
    answer = answers["decision"]
    decided = answer.content.get("decision") if answer.accepted else None
    decision = DECISIONS.get(str(decided), "dismissed")
    return text_result(f"Decision: {decision}", structured={"decision": decision})


async def _slow_compute(task: TaskInput, run: Run) -> ToolResult:
    seconds = float(task.arguments.get("seconds", 0))
    label = str(task.arguments.get("label", ""))
    run.report(f"Computing {label!r} for {seconds:g} s")
    await asyncio.sleep(seconds)  # a cancellation interrupts it at once, as a durable timer
    return text_result(
        f"Computed {label!r} in {seconds:g} s", structured={"label": label, "seconds": seconds}
    )


async def _failing_job(task: TaskInput, run: Run) -> ToolResult:
    run.report("Running a job that will fail")
    return text_result("failing_job failed: the simulated job reported an error", is_error=True)


async def _protocol_error_job(task: TaskInput, run: Run) -> ToolResult:
    run.report("Running a job that will hit a protocol error")
    raise ScriptFailed(-32603, "protocol_error_job: simulated internal error")


async def _short_lived(task: TaskInput, run: Run) -> ToolResult:
    return text_result("done quickly")


SCRIPTS: dict[str, Script] = {
    "TestToolWithTask": _greet_from_prelude,
    "ConfirmDelete": _confirm_delete,
    "RequestApproval": _request_approval,
    "MultiInput": _multi_input,
    "SlowCompute": _slow_compute,
    "FailingJob": _failing_job,
    "ProtocolErrorJob": _protocol_error_job,
    "TestsShortLived": _short_lived,
}
