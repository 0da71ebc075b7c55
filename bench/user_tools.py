"""A toolset shaped like a user's (docs/guides/writing-tools.md): its workflow lives in the
same module as its `register`, which imports `mcp_server.tools.registry`. bench.workflow_runner
parks its approvals to measure what the sandbox costs a user's workflow.
"""

from __future__ import annotations

from mcp_server.tools.registry import Tool, ToolRegistry
from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

USER_APPROVAL = "bench_user_approval"


@task_workflow("BenchUserApproval")
class UserApproval(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        form = elicitation(str(task.arguments["message"]), {"ok": {"type": "boolean"}}, ["ok"])
        answer = await self.ask("ok", form)
        return text_result("approved" if answer.content.get("ok") else "refused")


def register(registry: ToolRegistry) -> None:
    registry.add_workflows([UserApproval])
    registry.add(
        Tool(
            USER_APPROVAL,
            "Asks one yes/no question (the benchmark's user-module approval).",
            {"type": "object", "properties": {"message": {"type": "string"}}},
            task_support="required",
            workflow="BenchUserApproval",
        )
    )
