"""Tools that exist only for the tests, loaded the way a user's module is (`--tools`)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from mcp_server.tools.registry import Tool, ToolRegistry
from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

SHORT_TTL_MS = 3000


@task_workflow("TestsHugeResult")
class HugeResultWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        return text_result("x" * int(task.arguments["bytes"]))


@task_workflow("TestsShortLived")
class ShortLivedWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        return text_result("done quickly")


@task_workflow("TestsWaitForever")
class WaitForeverWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        await workflow.wait_condition(lambda: False)
        return text_result("unreachable")


@task_workflow("TestsLeaky")
class LeakyWorkflow(TaskWorkflow):
    """Tries to leak its secret argument everywhere a task publishes something."""

    async def execute(self, task: TaskInput) -> ToolResult:
        key = task.arguments["api_key"]
        self.report(f"calling the API with key {key}")
        await self.ask("go", elicitation(f"Use key {key}?", {"go": {"type": "boolean"}}))
        if task.arguments.get("fail"):
            raise ApplicationError(f"the API refused key {key}", non_retryable=True)
        return text_result("done")


@activity.defn(name="tests_use_key")
async def use_key(key: str, fail: bool) -> str:
    """Stands for a call to an outside API with the key; its error names the key."""
    if fail:
        raise RuntimeError(f"login refused for key {key}")
    return f"token for {key}"


@task_workflow("TestsSecretWork")
class SecretWorkWorkflow(TaskWorkflow):
    """Uses its secret `api_key` where an exception, a result or an answer can show it:
    `mode` is "activity_fails", "workflow_bug", "result" or "ask"."""

    async def execute(self, task: TaskInput) -> ToolResult:
        key, mode = task.arguments["api_key"], task.arguments["mode"]
        if mode == "workflow_bug":
            raise RuntimeError(f"a bug while using key {key}")  # fails the workflow task
        answer: dict[str, Any] = {}
        if mode == "ask":
            asked = await self.ask("go", elicitation("Go?", {"comment": {"type": "string"}}))
            answer = asked.raw
        token = await workflow.execute_activity(
            use_key,
            args=[key, mode == "activity_fails"],
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(milliseconds=100), maximum_attempts=2
            ),
        )
        note = task.arguments.get("note", "")
        return text_result(
            f"{token}; key {key} accepted; {note}",
            structured={"key": key, "token": token, "note": note, "answer": answer},
        )


@task_workflow("TestsSplitDecision")
class SplitDecisionWorkflow(TaskWorkflow):
    """Asks two questions at once: "mine" of its caller, "theirs" of `approvers`."""

    async def execute(self, task: TaskInput) -> ToolResult:
        form = elicitation("Go?", {"go": {"type": "boolean"}})
        mine, theirs = await asyncio.gather(
            self.ask("mine", form),
            self.ask("theirs", form, approvers=list(task.arguments["approvers"])),
        )
        return text_result("both answered", structured={"mine": mine.raw, "theirs": theirs.raw})


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(
        [
            HugeResultWorkflow,
            ShortLivedWorkflow,
            WaitForeverWorkflow,
            LeakyWorkflow,
            SecretWorkWorkflow,
            SplitDecisionWorkflow,
        ]
    )
    registry.add_activities([use_key])
    schema = {"type": "object", "properties": {"bytes": {"type": "integer"}}}
    task: dict[str, Any] = {"task_support": "required"}
    registry.add(
        Tool(
            "tests_huge_result",
            "Returns `bytes` bytes of text.",
            schema,
            workflow="TestsHugeResult",
            **task,
        )
    )
    registry.add(
        Tool(
            "tests_short_lived",
            "Completes at once; TTL 3 s.",
            {"type": "object"},
            workflow="TestsShortLived",
            ttl_ms=SHORT_TTL_MS,
            **task,
        )
    )
    registry.add(
        Tool(
            "tests_wait_forever",
            "Never finishes by itself.",
            {"type": "object"},
            workflow="TestsWaitForever",
            **task,
        )
    )
    leaky = {
        "type": "object",
        "properties": {"api_key": {"type": "string"}, "fail": {"type": "boolean"}},
    }
    registry.add(
        Tool(
            "tests_leaky",
            "Tries to leak its secret api_key.",
            leaky,
            workflow="TestsLeaky",
            secret_arguments=frozenset({"api_key"}),
            required_capabilities={"elicitation": {}},
            **task,
        )
    )
    secret_work = {
        "type": "object",
        "properties": {
            "api_key": {"type": "string"},
            "mode": {"enum": ["activity_fails", "workflow_bug", "result", "ask"]},
            "note": {"type": "string"},
        },
        "required": ["api_key", "mode"],
    }
    registry.add(
        Tool(
            "tests_secret_work",
            "Uses its secret api_key in errors and results.",
            secret_work,
            workflow="TestsSecretWork",
            secret_arguments=frozenset({"api_key"}),
            **task,
        )
    )
    split = {"type": "object", "properties": {"approvers": {"type": "array"}}}
    registry.add(
        Tool(
            "tests_split_decision",
            "Asks its caller and its approvers.",
            split,
            workflow="TestsSplitDecision",
            **task,
        )
    )
    registry.add(
        Tool(
            "tests_times_out",
            "Never finishes; its TTL is 3 s.",
            {"type": "object"},
            workflow="TestsWaitForever",
            ttl_ms=SHORT_TTL_MS,
            **task,
        )
    )
