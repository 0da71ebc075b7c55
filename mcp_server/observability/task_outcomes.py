"""The task SLIs the worker measures, through a worker interceptor and the SDK's meter (served
on the worker's metrics port, observability/sdk_metrics.py):

- `mcp_tasks_task_ends_total{tool, outcome}`: how each task workflow ended (completed,
  error_result: completed with an `isError` result, failed, cancelled). A continue-as-new is
  not an end; a workflow task failure (a bug) is retried by Temporal and not an end either. A
  workflow terminated by an operator or past its run timeout ends in Temporal, not in a
  worker: not counted here (Temporal's visibility has them: `ExecutionStatus="Terminated"`).
- `mcp_tasks_input_answer_wait_seconds{tool}`: the time from `input_required` (the task
  state's `lastUpdatedAt` when the wait began) to the answer that ended the wait.
- `mcp_tasks_activity_retries_over_total{activity_type}`: activity attempts beyond
  MCP_TASKS_ACTIVITY_ATTEMPTS_THRESHOLD (an activity failing again and again).

Why here and not in the server: every end and every answer passes through exactly one worker,
whichever server replica (or inbox, or operator CLI) took the answer, and the workflow meter
records nothing while a workflow replays (after a cache eviction or on another worker), so
each is counted once however many replicas run. A server replica counts only what it saw.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio import activity, workflow
from temporalio.exceptions import FailureError, is_cancelled_exception
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    HandleSignalInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from mcp_server.observability.metrics import (
    ACTIVITY_RETRIES_OVER,
    INPUT_ANSWER_SECONDS,
    TASK_ENDS,
    TASK_ENDS_HELP,
)
from mcp_tasks.contracts.task_state import SUBMIT_INPUT_SIGNAL, TaskInput
from workflows.task_workflow import TaskWorkflow


def end_of(result: object) -> str:
    """The outcome of a task workflow that returned `result` (its CallToolResult dict)."""
    return "error_result" if isinstance(result, dict) and result.get("isError") else "completed"


def failed_end(err: BaseException) -> str | None:
    """The outcome of a task workflow that raised `err`; None when it is no end (a
    continue-as-new, or a workflow task failure that Temporal retries)."""
    if is_cancelled_exception(err):
        return "cancelled"
    if isinstance(err, FailureError):
        return "failed"
    return None


def wait_seconds(since: str, now: datetime) -> float | None:
    try:
        began = datetime.fromisoformat(since.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (now - began).total_seconds())


class TaskOutcomes(Interceptor):
    def __init__(self, activity_attempts_threshold: int) -> None:
        self.activity_attempts_threshold = activity_attempts_threshold

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityAttempts(next, self.activity_attempts_threshold)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _TaskWorkflowOutcomes


class _ActivityAttempts(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, threshold: int) -> None:
        super().__init__(next)
        self.threshold = threshold

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        if info.attempt > self.threshold:
            meter = activity.metric_meter()
            meter.create_counter(ACTIVITY_RETRIES_OVER, "Activity attempts over the threshold").add(
                1, {"activity_type": info.activity_type}
            )
        return await self.next.execute_activity(input)


class _TaskWorkflowOutcomes(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        task = input.args[0] if input.args else None
        if not isinstance(task, TaskInput):  # not a task workflow (quota, webhooks)
            return await self.next.execute_workflow(input)
        try:
            result = await self.next.execute_workflow(input)
        except BaseException as err:
            outcome = failed_end(err)
            if outcome is not None:
                _count_end(task.tool, outcome)
            raise
        _count_end(task.tool, end_of(result))
        return result

    async def handle_signal(self, input: HandleSignalInput) -> None:
        instance = workflow.instance()
        if input.signal != SUBMIT_INPUT_SIGNAL or not isinstance(instance, TaskWorkflow):
            return await self.next.handle_signal(input)
        before = instance.state()
        await self.next.handle_signal(input)
        after = instance.state()
        if before is None or before["status"] != "input_required":
            return None
        if after is not None and after["status"] == "input_required":
            return None
        waited = wait_seconds(before["lastUpdatedAt"], workflow.now())
        if waited is not None:
            histogram = workflow.metric_meter().create_histogram_float(
                INPUT_ANSWER_SECONDS, "Time from input_required to its answer (seconds)"
            )
            histogram.record(waited, {"tool": before["tool"]})
        return None


def _count_end(tool: str, outcome: str) -> None:
    counter = workflow.metric_meter().create_counter(TASK_ENDS, TASK_ENDS_HELP)
    counter.add(1, {"tool": tool, "outcome": outcome})
