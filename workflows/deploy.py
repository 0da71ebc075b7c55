"""`deploy`: a multi-step pipeline with approval gates and rollback.

- Each step is one `run_command` activity (a subprocess in its own process group).
- A step with `approval` first asks a human (an elicitation form showing what will run).
- A declined approval, a failing step, or a cancellation rolls back the completed steps in
  reverse order (their `rollback` commands), then ends: `completed` + `isError` for a decline
  or a failure, `cancelled` for a cancellation.
- A worker killed mid-step: completed steps never run again (their results are in the history);
  the interrupted step is retried, so steps must be idempotent.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception
from temporalio.workflow import ActivityCancellationType

from workflows.results import text_result
from workflows.task_state import TaskInput
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

with workflow.unsafe.imports_passed_through():
    from activities.commands import CommandInput, PipelineFiles, run_command

HEARTBEAT_TIMEOUT = timedelta(seconds=5)
# Retries are for infrastructure (a worker that died); a command that fails is not retried.
STEP_RETRIES = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))


@task_workflow("Deploy")
class DeployWorkflow(TaskWorkflow):
    def __init__(self) -> None:
        super().__init__()
        self.steps: list[dict[str, Any]] = []
        self.done: list[dict[str, Any]] = []
        self._capabilities: dict[str, Any] = {}

    async def execute(self, task: TaskInput) -> dict[str, Any]:
        name = str(task.arguments["pipeline"])
        try:
            pipeline = await workflow.execute_activity_method(
                PipelineFiles.load_pipeline,
                name,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=STEP_RETRIES,
            )
        except ActivityError as err:
            cause = err.cause
            message = cause.message if isinstance(cause, ApplicationError) else str(err)
            return text_result(f"Pipeline {name!r} cannot run: {message}", is_error=True)
        self.steps = [{"name": s["name"], "status": "pending"} for s in pipeline["steps"]]
        self._capabilities = task.client_capabilities
        try:
            return await self._run(name, pipeline["steps"])
        except BaseException as err:
            if is_cancelled_exception(err):
                await self._roll_back("cancelled")
            raise

    async def _run(self, name: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
        total = len(steps)
        for index, step in enumerate(steps):
            label = f'step {index + 1}/{total} "{step["name"]}"'
            if step["approval"] and not isinstance(self._capabilities.get("elicitation"), dict):
                await self._roll_back("no way to ask for approval")
                return self._result(
                    f"{name}: {label} needs an approval, but the client did not declare the "
                    "elicitation capability; rolled back",
                    is_error=True,
                )
            if step["approval"] and not await self._approved(label, step):
                self.steps[index]["status"] = "declined"
                await self._roll_back("declined")
                return self._result(f"{name}: {label} was declined; rolled back", is_error=True)
            self.report(f"{label}: running")
            self.steps[index]["status"] = "running"
            outcome = await self._command(step["run"], step)
            self.steps[index].update(
                outcome, status="succeeded" if outcome["exitCode"] == 0 else "failed"
            )
            if outcome["exitCode"] != 0:
                await self._roll_back("failed")
                why = "timed out" if outcome["timedOut"] else f"exited with {outcome['exitCode']}"
                return self._result(
                    f"{name}: {label} {why}; rolled back. Output tail:\n{outcome['outputTail']}",
                    is_error=True,
                )
            self.done.append(step)
        return self._result(f"{name}: {total} steps succeeded")

    async def _approved(self, label: str, step: dict[str, Any]) -> bool:
        answer = await self.ask(
            self.fresh_key(f"approve-{step['name']}"),
            elicitation(
                f"{step['approval']}\n\nNext: {label}, which runs: {step['run']}",
                {
                    "approve": {"type": "boolean", "title": "Approve"},
                    "comment": {"type": "string", "title": "Comment", "maxLength": 2000},
                },
                ["approve"],
            ),
            status_message=f"Waiting for approval before {label}",
        )
        content = answer.get("content") or {}
        return answer.get("action") == "accept" and content.get("approve") is True

    async def _command(self, command: str, step: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await workflow.execute_activity(
            run_command,
            CommandInput(
                command=command,
                cwd=step["cwd"],
                env=step["env"],
                timeout_seconds=step["timeout_seconds"],
            ),
            start_to_close_timeout=timedelta(seconds=step["timeout_seconds"] + 60),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=STEP_RETRIES,
            # Wait until the process group is really gone before the task says `cancelled`.
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        return result

    async def _roll_back(self, why: str) -> None:
        for step in reversed(self.done):
            entry = next(s for s in self.steps if s["name"] == step["name"])
            if not step["rollback"]:
                entry["rollback"] = "none defined"
                continue
            self.report(f'{why}: rolling back "{step["name"]}"')
            outcome = await self._command(step["rollback"], step)
            entry["rollback"] = (
                "succeeded" if outcome["exitCode"] == 0 else f"failed ({outcome['exitCode']})"
            )
            entry["status"] = "rolled back" if outcome["exitCode"] == 0 else entry["status"]
        self.done.clear()

    def _result(self, text: str, *, is_error: bool = False) -> dict[str, Any]:
        return text_result(text, structured={"steps": self.steps}, is_error=is_error)


WORKFLOWS = [DeployWorkflow]
