"""A tool for the test of oversized questions (tests/protocol/test_input_size.py): it asks a
question whose message is `bytes` long; with `fallback`, it catches the refusal and asks a short
one."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from mcp_server.tools.registry import Tool, ToolRegistry
from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.input_limits import INPUT_TOO_LARGE_ERROR
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

OK = {"ok": {"type": "boolean"}}


@task_workflow("TestsAskLarge")
class AskLargeWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        message = "x" * int(task.arguments["bytes"])
        try:
            await self.ask("large", elicitation(message, OK))
        except ApplicationError as err:
            if not task.arguments.get("fallback") or err.type != INPUT_TOO_LARGE_ERROR:
                raise
            await self.ask("small", elicitation("The short version?", OK))
        return text_result("asked")


def register(registry: ToolRegistry) -> None:
    registry.add_workflows([AskLargeWorkflow])
    schema = {
        "type": "object",
        "properties": {"bytes": {"type": "integer"}, "fallback": {"type": "boolean"}},
        "required": ["bytes"],
    }
    registry.add(
        Tool(
            "tests_ask_large",
            "Asks a question `bytes` long.",
            schema,
            task_support="optional",
            workflow="TestsAskLarge",
            poll_interval_ms=200,
        )
    )
