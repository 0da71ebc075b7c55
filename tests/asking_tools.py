"""A tool for the tests of questions a task puts to a 2025-11-25 client mid-call: it asks the
input request its arguments carry and returns the answer as JSON text. With `steps`, it
publishes them as its step timeline first (as given: the inbox tests send odd timestamps)."""

from __future__ import annotations

import json
from typing import cast

from mcp_server.tools.registry import Tool, ToolRegistry
from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import InputRequest, ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, task_workflow


@task_workflow("TestsAsk")
class AskWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        if isinstance(task.arguments.get("steps"), list):
            self.publish_steps(task.arguments["steps"])
        answer = await self.ask("question", cast(InputRequest, dict(task.arguments["request"])))
        return text_result(json.dumps(answer.raw, sort_keys=True))


def register(registry: ToolRegistry) -> None:
    registry.add_workflows([AskWorkflow])
    schema = {
        "type": "object",
        "properties": {"request": {"type": "object"}},
        "required": ["request"],
    }
    registry.add(
        Tool(
            "tests_ask",
            "Asks the input request `request`, then returns the answer.",
            schema,
            task_support="optional",
            workflow="TestsAsk",
            poll_interval_ms=200,
        )
    )
