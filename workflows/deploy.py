"""`deploy`: a multi-step pipeline with approval gates and rollback.

- Each step is one `run_command` activity (a subprocess in its own process group).
- A step with `approval` first asks a human (an elicitation form showing what will run).
- A declined approval, a failing step, or a cancellation rolls back the completed steps in
  reverse order (their `rollback` commands), then ends: `completed` + `isError` for a decline
  or a failure, `cancelled` for a cancellation. A step fails when its command exits non-zero
  or times out, and also when its activity fails outright (the command cannot be spawned, the
  activity's own timeout, retries exhausted, an exception on the worker): every kind rolls
  back. A rollback command that fails (either way) is recorded and the others still run.
- A cancelled deploy's statusMessage says where it was stopped and what was rolled back, each
  step with its outcome: `Cancelled during step 2/3 "migrate"; rolled back: "build"
  (succeeded)` (a cancelled task carries no result, so this is where a client reads it).
- A worker killed mid-step: completed steps never run again (their results are in the history);
  the interrupted step is retried, so steps must be idempotent.
- A gate with `approvers` is answered by them (mcp_tasks/contracts/approvers.py), not the caller: it
  needs no elicitation capability of the caller's client.
- A gate whose caller's client cannot show the form (no elicitation capability) waits like any
  other, for the inbox, `mcp-tasks tasks answer` or another client of the owner's
  (docs/concepts/state-machine.md). Runs that reached such a gate before PARK_PATCH rolled back
  there, and replay so.
- Pausable (workflows/steering.py): the start of each step is a safe point, so a paused deploy
  finishes the step it runs and holds before the next one (and before its approval).
- The step timeline (TaskState.steps: status, startedAt/endedAt, exitCode, outputTail,
  rollback) is published with the statusMessage at the points the deploy always published,
  so it issues no command of its own (workflows/deploy_timeline.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception
from temporalio.exceptions import TimeoutError as ActivityTimeout
from temporalio.workflow import ActivityCancellationType

from mcp_tasks.contracts.task_state import TaskInput, iso_timestamp
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.deploy_timeline import timeline
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

with workflow.unsafe.imports_passed_through():
    from activities.deploy import CommandInput, PipelineFiles, run_command

HEARTBEAT_TIMEOUT = timedelta(seconds=5)
# Retries are for infrastructure (a worker that died); a command that fails is not retried.
STEP_RETRIES = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))
# Runs that reach a gate their caller cannot answer on code with this patch wait there.
PARK_PATCH = "deploy-gate-waits-without-elicitation"


@task_workflow("Deploy")
class DeployWorkflow(TaskWorkflow):
    def __init__(self) -> None:
        super().__init__()
        self.steps: list[dict[str, Any]] = []
        self.done: list[dict[str, Any]] = []
        self._capabilities: dict[str, Any] = {}
        # What the current step is (for the cancel message) and each rollback's outcome.
        self._current_label: str | None = None
        self._rolled_back: list[str] = []
        # The timeline's own facts: when each step started and ended, which one waits.
        self._times: dict[str, dict[str, str]] = {}
        self._waiting: str | None = None
        self._finished = False

    async def execute(self, task: TaskInput) -> ToolResult:
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
                self._waiting = None
                await self._roll_back("cancelled")
                self.cancel_message = self._cancelled_summary()
                self._finished = True
                self._timeline()
            raise

    async def _run(self, name: str, steps: list[dict[str, Any]]) -> ToolResult:
        total = len(steps)
        for index, step in enumerate(steps):
            label = f'step {index + 1}/{total} "{step["name"]}"'
            await self.safe_point()  # no command unless the deploy was paused
            gated = step["approval"] and not step.get("approvers")
            # The patch is asked only where the old code rolled back, so no other run records it.
            unanswerable = gated and not isinstance(self._capabilities.get("elicitation"), dict)
            if unanswerable and not workflow.patched(PARK_PATCH):
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
            self.steps[index]["status"] = "running"
            self._times[step["name"]] = {"startedAt": iso_timestamp(workflow.now())}
            self._timeline()
            self.report(f"{label}: running")
            self._current_label = label
            outcome = await self._command(step["run"], step)
            self._current_label = None
            self._times[step["name"]]["endedAt"] = iso_timestamp(workflow.now())
            self.steps[index].update(
                outcome, status="succeeded" if outcome["exitCode"] == 0 else "failed"
            )
            if outcome["exitCode"] != 0:
                await self._roll_back("failed")
                return self._result(
                    f"{name}: {label} {_why(outcome)}; rolled back"
                    + self._rollback_note()
                    + f". Output tail:\n{outcome['outputTail']}",
                    is_error=True,
                )
            self.done.append(step)
        return self._result(f"{name}: {total} steps succeeded")

    async def _approved(self, label: str, step: dict[str, Any]) -> bool:
        self._waiting = step["name"]
        self._timeline()
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
            approvers=step.get("approvers"),
        )
        self._waiting = None
        return answer.accepted and answer.content.get("approve") is True

    async def _command(self, command: str, step: dict[str, Any]) -> dict[str, Any]:
        """The command's outcome. An activity that fails outright is an outcome too
        (`exitCode` None, `error` saying why), so the caller rolls back as for a non-zero exit;
        only a cancellation propagates."""
        try:
            return await self._run_command(command, step)
        except ActivityError as err:
            if is_cancelled_exception(err):
                raise
            return {
                "exitCode": None,
                "timedOut": isinstance(err.cause, ActivityTimeout),
                "error": _activity_failure(err),
                "outputTail": "",
            }

    async def _run_command(self, command: str, step: dict[str, Any]) -> dict[str, Any]:
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
                self._rolled_back.append(f'"{step["name"]}" (none defined)')
                continue
            self._timeline()
            self.report(f'{why}: rolling back "{step["name"]}"')
            outcome = await self._command(step["rollback"], step)
            entry["rollback"] = (
                "succeeded" if outcome["exitCode"] == 0 else f"failed: {_why(outcome)}"
            )
            entry["status"] = "rolled back" if outcome["exitCode"] == 0 else entry["status"]
            self._rolled_back.append(f'"{step["name"]}" ({entry["rollback"]})')
        self.done.clear()

    def _rollback_note(self) -> str:
        failed = [s["name"] for s in self.steps if str(s.get("rollback", "")).startswith("failed")]
        return f" (the rollback of {', '.join(failed)} failed)" if failed else ""

    def _cancelled_summary(self) -> str:
        where = f"Cancelled during {self._current_label}" if self._current_label else "Cancelled"
        if not self._rolled_back:
            return f"{where}; nothing to roll back"
        return f"{where}; rolled back: {', '.join(self._rolled_back)}"

    def _result(self, text: str, *, is_error: bool = False) -> ToolResult:
        self._finished = True
        self._timeline()  # published with the final state
        return text_result(text, structured={"steps": self.steps}, is_error=is_error)

    def _timeline(self) -> None:
        self.publish_steps(timeline(self.steps, self._times, self._waiting, self._finished))


def _activity_failure(err: ActivityError) -> str:
    """Why a step's activity failed outright, in a line (its cause, e.g. the spawn error)."""
    cause = err.cause
    if isinstance(cause, ActivityTimeout):
        return f"its activity timed out ({cause.type.name if cause.type else 'timeout'})"
    message = getattr(cause, "message", None) or str(cause or err)
    return f"its activity failed: {message}"


def _why(outcome: dict[str, Any]) -> str:
    """Why a command failed: timed out, its exit code, or why its activity failed outright."""
    if outcome.get("error"):
        return str(outcome["error"])
    return "timed out" if outcome["timedOut"] else f"exited with {outcome['exitCode']}"


WORKFLOWS = [DeployWorkflow]
