"""Existing Temporal workflows served as MCP tools, with no change to them.

The task is a thin parent (its workflow ID is the taskId, so every task method works as for any
other tool) that runs the user's workflow as a child, by type name, on the user's task queue,
where the user's own workers pick it up. Cancelling the task cancels the child. The child's
result becomes `content` + `structuredContent`; its failure becomes an `isError` result.

A child nobody runs (no worker polls its task queue, or the workers there do not register its
type) is reported, and the task keeps waiting for it:
- after `no_worker_wait_seconds` (default 60) without the child completing a workflow task,
  an activity asks Temporal why (activities/exposed.py) and the statusMessage says so, e.g.
  `no worker polls task queue payments; waiting for one (cancel the task to give up)`; it asks
  again at doubling intervals (at most every `MAX_PROBE_INTERVAL_S`) until the child runs, then
  never again. The task does not fail on its own: a worker being deployed or restarted is the
  usual cause, and the child runs as soon as one polls (the task's TTL bounds the wait).
- `tasks/cancel` always ends the task: the child is asked to cancel, and when it has not
  closed within `cancel_wait_seconds` (default 30; it never will without a worker) the task
  ends `cancelled` anyway, saying so; the child is then terminated by Temporal (the parent
  close policy TERMINATE), so nothing is left running.
Tasks started before this watch existed keep their old behaviour (`workflow.patched`).

A child may speak the interactive contract (docs/reference/interactive-contract.md): its reports
and questions are handled by workflows/child_questions.py, and under INTERACTIVE_PATCH its
result maps as the contract says: a CallToolResult as it is, a failure of type `McpToolError` as
a tool error with the failure's message (tasks that reached their end before keep the mapping
they had).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError, ChildWorkflowError, is_cancelled_exception

from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.child_questions import ChildQuestions
from workflows.child_steering import ChildSteering
from workflows.results import text_result
from workflows.task_workflow import task_workflow

with workflow.unsafe.imports_passed_through():
    from activities.exposed import PROBE_CHILD_ACTIVITY, ChildHealth, ChildProbe
    from mcp_tasks.contracts.interactive import TOOL_ERROR_TYPE, is_call_tool_result

NO_WORKER_WAIT_S = 60.0
CANCEL_WAIT_S = 30.0
MAX_PROBE_INTERVAL_S = 600.0
WATCH_PATCH = "exposed-child-watch"
INTERACTIVE_PATCH = "exposed-interactive-result"
PROBE_RETRIES = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))


def pick(value: Any, path: str | None) -> Any:
    """`value` at a dotted path ("receipt.id"), or all of it without one."""
    for part in (path or "").split(".") if path else []:
        value = value[part] if isinstance(value, dict) else None
    return value


def tool_error(message: str, details: Sequence[Any]) -> ToolResult:
    """The result of a child's `McpToolError`: its message, its first detail (an object) as
    `structuredContent`."""
    first = details[0] if details else None
    structured = first if isinstance(first, dict) else None
    return text_result(message, structured=structured, is_error=True)


@task_workflow("ExposedWorkflow")
class ExposedWorkflow(ChildSteering, ChildQuestions):
    async def execute(self, task: TaskInput) -> ToolResult:
        config = task.tool_config
        child_type, queue = str(config["workflow"]), str(config["task_queue"])
        args = (
            [task.arguments.get(name) for name in config["positional"]]
            if config.get("positional")
            else [task.arguments]
        )
        child_id = self.child_id = f"{task.task_id}-{child_type}"
        running = f"running {child_type} on task queue {queue} (workflow {child_id})"
        self.report(running)
        try:
            if workflow.patched(WATCH_PATCH):
                result = await self._watched(ChildProbe(child_id, child_type, queue), args, config)
            else:
                result = await workflow.execute_child_workflow(
                    child_type, args=args, id=child_id, task_queue=queue
                )
        except ChildWorkflowError as err:
            if is_cancelled_exception(err):
                raise
            cause = err.cause
            message = getattr(cause, "message", None) or str(cause or err)
            if (
                isinstance(cause, ApplicationError)
                and cause.type == TOOL_ERROR_TYPE
                and workflow.patched(INTERACTIVE_PATCH)
            ):
                return tool_error(message, cause.details)
            return text_result(f"{child_type} failed: {message}", is_error=True)
        if is_call_tool_result(result) and workflow.patched(INTERACTIVE_PATCH):
            return ToolResult.read(result)
        value = pick(result, config.get("result_path"))
        structured = value if isinstance(value, dict) else {"result": value}
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return text_result(text, structured=structured)

    async def _watched(self, probe: ChildProbe, args: list[Any], config: dict[str, Any]) -> Any:
        """The child's result; says why while nobody runs it; a cancellation ends the task
        within `cancel_wait_seconds` whether or not the child ever stops."""
        handle = await workflow.start_child_workflow(
            probe.workflow_type, args=args, id=probe.workflow_id, task_queue=probe.task_queue
        )
        self.relay_to(handle)  # steer, pause and resume go on to the child (child_steering.py)
        try:
            await self._until_started(handle, probe, config)
            # Not `await handle`: that would cancel the child on the task's cancellation and
            # wait for it without bound; workflow.wait leaves the child to _cancel_child.
            await workflow.wait([handle])
        except BaseException as err:
            if is_cancelled_exception(err) and not handle.done():
                await self._cancel_child(handle, probe, config)
            raise
        return handle.result()

    async def _until_started(
        self,
        handle: workflow.ChildWorkflowHandle[Any, Any],
        probe: ChildProbe,
        config: dict[str, Any],
    ) -> None:
        """Return once the child has run a workflow task (or closed); report why it has not."""
        interval = float(config.get("no_worker_wait_seconds") or NO_WORKER_WAIT_S)
        reported = False
        while True:
            done, _ = await workflow.wait([handle], timeout=interval)
            if done:
                return
            health: ChildHealth = await workflow.execute_activity(
                PROBE_CHILD_ACTIVITY,
                probe,
                result_type=ChildHealth,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=PROBE_RETRIES,
            )
            if health.started:
                if reported:
                    self.report(f"running {probe.workflow_type} on task queue {probe.task_queue}")
                return
            problem = health.problem or (
                f"{probe.workflow_type} has not started: no worker has taken its first "
                f"workflow task on task queue {probe.task_queue} yet"
            )
            self.report(f"{problem}; waiting for it (cancel the task to give up)")
            reported = True
            interval = min(interval * 2, MAX_PROBE_INTERVAL_S)

    async def _cancel_child(
        self,
        handle: workflow.ChildWorkflowHandle[Any, Any],
        probe: ChildProbe,
        config: dict[str, Any],
    ) -> None:
        """Ask the child to cancel and wait for it a bounded time; a child that does not close
        in time is left to the parent close policy (terminated as this task closes)."""
        wait_s = float(config.get("cancel_wait_seconds") or CANCEL_WAIT_S)
        handle.cancel()
        done, _ = await workflow.wait([handle], timeout=wait_s)
        if done and not handle.cancelled():
            handle.exception()  # the child's own cancellation: retrieved, nothing to say
        else:
            self.cancel_message = (
                f"Cancelled; {probe.workflow_type} did not stop within {wait_s:g} s (is a worker "
                f"polling task queue {probe.task_queue}?): it was terminated"
            )


WORKFLOWS = [ExposedWorkflow]
