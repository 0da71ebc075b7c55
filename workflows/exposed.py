"""Existing Temporal workflows served as MCP tools, with no change to them.

The task is a thin parent (its workflow ID is the taskId, so every task method works as for any
other tool) that runs the user's workflow as a child, by type name, on the user's task queue,
where the user's own workers pick it up. Cancelling the task cancels the child. The child's
result becomes `content` + `structuredContent`; its failure becomes an `isError` result.
"""

from __future__ import annotations

import json
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, is_cancelled_exception

from workflows.results import text_result
from workflows.task_state import TaskInput
from workflows.task_workflow import TaskWorkflow, task_workflow


def pick(value: Any, path: str | None) -> Any:
    """`value` at a dotted path ("receipt.id"), or all of it without one."""
    for part in (path or "").split(".") if path else []:
        value = value[part] if isinstance(value, dict) else None
    return value


@task_workflow("ExposedWorkflow")
class ExposedWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        config = task.tool_config
        child_type, queue = str(config["workflow"]), str(config["task_queue"])
        args = (
            [task.arguments.get(name) for name in config["positional"]]
            if config.get("positional")
            else [task.arguments]
        )
        child_id = f"{task.task_id}-{child_type}"
        self.report(f"running {child_type} on task queue {queue} (workflow {child_id})")
        try:
            result = await workflow.execute_child_workflow(
                child_type, args=args, id=child_id, task_queue=queue
            )
        except ChildWorkflowError as err:
            if is_cancelled_exception(err):
                raise
            cause = err.cause
            message = getattr(cause, "message", None) or str(cause or err)
            return text_result(f"{child_type} failed: {message}", is_error=True)
        value = pick(result, config.get("result_path"))
        structured = value if isinstance(value, dict) else {"result": value}
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return text_result(text, structured=structured)


WORKFLOWS = [ExposedWorkflow]
