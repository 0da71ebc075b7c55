"""Tools that exist only for the tests, loaded the way a user's module is (`--tools`)."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from mcp_server.tools.registry import Tool, ToolRegistry
from workflows.results import text_result
from workflows.task_state import TaskInput
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

SHORT_TTL_MS = 3000


@task_workflow("TestsHugeResult")
class HugeResultWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        return text_result("x" * int(task.arguments["bytes"]))


@task_workflow("TestsShortLived")
class ShortLivedWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        return text_result("done quickly")


@task_workflow("TestsWaitForever")
class WaitForeverWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        await workflow.wait_condition(lambda: False)
        return text_result("unreachable")


@task_workflow("TestsLeaky")
class LeakyWorkflow(TaskWorkflow):
    """Tries to leak its secret argument everywhere a task publishes something."""

    async def execute(self, task: TaskInput) -> dict[str, Any]:
        key = task.arguments["api_key"]
        self.report(f"calling the API with key {key}")
        await self.ask("go", elicitation(f"Use key {key}?", {"go": {"type": "boolean"}}))
        if task.arguments.get("fail"):
            raise ApplicationError(f"the API refused key {key}", non_retryable=True)
        return text_result("done")


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(
        [HugeResultWorkflow, ShortLivedWorkflow, WaitForeverWorkflow, LeakyWorkflow]
    )
    schema = {"type": "object", "properties": {"bytes": {"type": "integer"}}}
    task: dict[str, Any] = {"task_support": "required"}
    registry.add(Tool("tests_huge_result", "Returns `bytes` bytes of text.", schema,
                      workflow="TestsHugeResult", **task))  # fmt: skip
    registry.add(Tool("tests_short_lived", "Completes at once; TTL 3 s.", {"type": "object"},
                      workflow="TestsShortLived", ttl_ms=SHORT_TTL_MS, **task))  # fmt: skip
    registry.add(Tool("tests_wait_forever", "Never finishes by itself.", {"type": "object"},
                      workflow="TestsWaitForever", **task))  # fmt: skip
    leaky = {
        "type": "object",
        "properties": {"api_key": {"type": "string"}, "fail": {"type": "boolean"}},
    }
    registry.add(Tool("tests_leaky", "Tries to leak its secret api_key.", leaky,
                      workflow="TestsLeaky", secret_arguments=frozenset({"api_key"}),
                      required_capabilities={"elicitation": {}}, **task))  # fmt: skip
    registry.add(Tool("tests_times_out", "Never finishes; its TTL is 3 s.", {"type": "object"},
                      workflow="TestsWaitForever", ttl_ms=SHORT_TTL_MS, **task))  # fmt: skip
