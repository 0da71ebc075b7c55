"""Two releases of one approval workflow, for tests/workflows/test_upgrade.py: V1 and V2 of workflow
type `TestsUpgradeApproval`, V2 changed under `workflow.patched`. A module of its own: the workflow
sandbox imports it, so it must not import the test stack (uvicorn, httpx)."""

from __future__ import annotations

from temporalio import workflow

from mcp_server.tools.registry import Tool, ToolRegistry
from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

TYPE = "TestsUpgradeApproval"
TOOL = "tests_upgrade_approval"
PATCH = "report-after-answer"


async def ask_approval(flow: TaskWorkflow) -> bool:
    answer = await flow.ask(
        "approve",
        elicitation("Go ahead?", {"approve": {"type": "boolean"}}, ["approve"]),
        status_message="Waiting for approval",
    )
    return answer.content.get("approve") is True


@task_workflow(TYPE)
class ApprovalV1(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        approved = await ask_approval(self)
        return text_result(f"v1: approved={approved}", structured={"version": 1})


@task_workflow(TYPE)
class ApprovalV2(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        # Asked once, at the start: an execution that began on V1 has no marker here, so it
        # keeps the old branch even after its answer arrives on V2.
        new_code = workflow.patched(PATCH)
        approved = await ask_approval(self)
        if not new_code:
            return text_result(f"v1: approved={approved}", structured={"version": 1})
        self.report("Answer received; recording it")
        return text_result(f"v2: approved={approved}", structured={"version": 2})


def registry_with(flow: type) -> ToolRegistry:
    registry = ToolRegistry()
    registry.add_workflows([flow])
    registry.add(
        Tool(
            TOOL,
            "Asks for an approval (a workflow that changes between two worker releases).",
            {"type": "object", "properties": {}},
            task_support="required",
            workflow=TYPE,
            poll_interval_ms=500,
            required_capabilities={"elicitation": {}},
        )
    )
    return registry
