"""The base every MCP task workflow builds on.

A tool's workflow subclasses `TaskWorkflow`, implements `execute()`, and is declared with
`@task_workflow("name")`. The base gives it:
- the task state (`TaskState`: status, statusMessage, inputRequests, pollIntervalMs) mirrored
  into the memo (`TaskState.to_memo()`, its one shape) and the `McpStatus` search attribute at
  every change (with `McpWaitingSince` while it waits, under WAITING_SINCE_PATCH), so
  `tasks/get` can answer from `describe()` with no worker alive; a change
  issues exactly the Temporal commands it always did, so running workflows keep replaying;
- `ask()` / `ask_all()`, which park the workflow at `input_required` until `tasks/update`
  answers (keys unique for the task's whole life); a question too large for the memo is
  refused as it is asked (workflows/input_limits.py);
- `report()` for progress in `statusMessage`;
- cooperative cancellation: a cancellation request interrupts whatever the workflow awaits,
  the state says `cancelled` and the execution closes as CANCELED;
- a result-size guard, so an oversized result ends the task with a clear tool error instead of
  a workflow that can never complete;
- `continue_as_new()`, which keeps a long task's history short: the next run has the same
  workflow ID (so the same taskId), the state `tasks/get` showed, and the tool's progress;
- the task's secret arguments redacted from its memo, its result and its failure
  (workflows/redaction.py; the worker's interceptor does the same for exceptions);
- webhook notifications (workflows/webhooks.py) when the task asks a question and when it
  ends, for the endpoints its `TaskInput.webhooks` names (no new command for any other task);
- steering (workflows/steering.py): `mcp.steer` messages queued in order, `mcp.pause` and
  `mcp.resume`; `await self.safe_point()` holds while paused and hands over the messages that
  arrived since the last one. Only tools that declare `steering` / `pausable` are sent them
  (the server refuses the others), so no other task ever issues a command for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from datetime import timedelta
from typing import Any, NoReturn, TypeVar

from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError, FailureError, is_cancelled_exception

from mcp_tasks.contracts.approvers import describe_approvers, outstanding_ids
from mcp_tasks.contracts.carried import Carried, CarriedSteering, Progress
from mcp_tasks.contracts.task_state import (
    CANCEL_REQUESTED_SIGNAL,
    MEMO_KEY,
    PROTOCOL_ERROR_TYPE,
    SEARCH_ATTRIBUTE_APPROVERS,
    SEARCH_ATTRIBUTE_STATUS,
    SEARCH_ATTRIBUTE_WAITING_SINCE,
    STATE_QUERY,
    SUBMIT_INPUT_SIGNAL,
    AuditStamp,
    SteerMessage,
    Step,
    SubmitInput,
    TaskInput,
    TaskMemo,
    TaskState,
    iso_timestamp,
)
from mcp_tasks.contracts.task_status import TaskStatus, published_status
from mcp_tasks.contracts.tool_messages import InputRequest, InputResponse, ToolResult
from workflows.input_limits import refuse_oversized
from workflows.quota import releasing_slot
from workflows.redaction import Redactor
from workflows.results import bounded
from workflows.steering import PAUSE_SIGNAL, RESUME_SIGNAL, STEER_SIGNAL, SteerInput
from workflows.webhooks import Notifications, failure_message

STATUS_KEY = SearchAttributeKey.for_keyword(SEARCH_ATTRIBUTE_STATUS)
APPROVERS_KEY = SearchAttributeKey.for_keyword_list(SEARCH_ATTRIBUTE_APPROVERS)
WAITING_SINCE_KEY = SearchAttributeKey.for_datetime(SEARCH_ATTRIBUTE_WAITING_SINCE)
# Runs that reach a change of waiting on code with this patch upsert McpWaitingSince.
WAITING_SINCE_PATCH = "mcp-waiting-since-attribute"
W = TypeVar("W", bound="TaskWorkflow")
P = TypeVar("P", bound=Progress)


def protocol_error(code: int, message: str, data: Any = None) -> ApplicationError:
    """Raise this from `execute()` to end the task `failed` with a JSON-RPC error object.

    Tool-level failures are not protocol errors: return an `isError` result for those.
    """
    return ApplicationError(
        message,
        {"code": code, "message": message, "data": data},
        type=PROTOCOL_ERROR_TYPE,
        non_retryable=True,
    )


_FORM_TYPES = frozenset({"string", "number", "integer", "boolean", "array"})
# One field of a form (the spec's PrimitiveSchemaDefinition, e.g. {"type": "boolean"}).
FormProperty = Mapping[str, object]


def elicitation(
    message: str, properties: Mapping[str, FormProperty], required: list[str] | None = None
) -> InputRequest:
    """A form-mode `elicitation/create` input request.

    Each property must be one of the flat, typed schemas a form may ask for (the spec's
    `PrimitiveSchemaDefinition`: `type` string, number, integer, boolean, or array for a
    multi-select): an untyped `{"enum": [...]}` is refused here, with the property's name,
    rather than sent as a request every client rejects."""
    for name, prop in properties.items():
        if not isinstance(prop, dict) or prop.get("type") not in _FORM_TYPES:
            raise ValueError(
                f"elicitation property {name!r} needs a type, one of {sorted(_FORM_TYPES)} "
                f"(e.g. {{'type': 'string', 'enum': [...]}}), not {prop!r}"
            )
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


class TaskWorkflow:
    """State and helpers shared by every task workflow. Subclasses implement `execute()`."""

    initial_status_message = "Queued"

    def __init__(self) -> None:
        # The state mirrored into the memo; set when run() starts, before anything awaits.
        self._state: TaskState | None = None
        self._outstanding: dict[str, InputRequest] = {}
        self._answers: dict[str, Any] = {}
        self._issued_keys: set[str] = set()
        # Redacts the task's secret arguments from all it publishes (see workflows/redaction.py).
        self._redactor = Redactor()
        self.task: TaskInput | None = None
        # What the previous run handed on (None in the task's first run).
        self._carried: Carried | None = None
        # Input key -> digest of the principal whose tasks/update answered it.
        self.answered_by: dict[str, str] = {}
        # The statusMessage a cancelled task ends with (a tool may say what was done).
        self.cancel_message = "Cancelled"
        # The McpApprovers value last upserted by this run (None: none yet).
        self._approver_ids: list[str] | None = None
        self._notifications = Notifications("", [], 0)
        # Steering: the messages not yet handed over, how many arrived, whether paused.
        self._steered: list[SteerMessage] = []
        self._steer_count = 0
        self._paused = False

    # ----- what subclasses implement and call -------------------------------------------

    async def execute(self, task: TaskInput) -> ToolResult:
        """Do the tool's work and return its result."""
        raise NotImplementedError

    def report(self, message: str, *, poll_interval_ms: int | None = None) -> None:
        """Publish a new statusMessage (and optionally a new pollIntervalMs)."""
        self._change(status_message=message)
        if poll_interval_ms is not None:
            self._change(poll_interval_ms=poll_interval_ms)
        self._publish()

    def publish_steps(self, steps: Sequence[Step]) -> None:
        """Set the step timeline (TaskState.steps); the next `report()`/`ask()` publishes it
        (no command of its own). Secret arguments are redacted; output tails are cut to their
        last 1,000 characters."""
        items = [step.copy() for step in steps]
        for item in items:
            tail = item.get("outputTail")
            if isinstance(tail, str):
                item["outputTail"] = tail[-1000:]
        self._change(steps=self._scrub(items))

    def fresh_key(self, base: str) -> str:
        """A key never issued before in this task: `base`, else `base-2`, `base-3`, ..."""
        key, n = base, 1
        while key in self._issued_keys:
            n += 1
            key = f"{base}-{n}"
        return key

    def resumed(self, progress_type: type[P]) -> P | None:
        """The progress the previous run passed to `continue_as_new()`, as a `progress_type`;
        None in the task's first run."""
        if self._carried is None:
            return None
        return progress_type(**self._carried.progress)

    def continue_as_new(self, progress: Progress) -> NoReturn:
        """Close this run and go on in a new one of the same task, from the start of
        `execute()`: the workflow ID (so the taskId), the task state tasks/get shows, the
        cancel message, the keys issued and `progress`, a dataclass (read back with
        `self.resumed(type)`) stay; the open-task quota slot stays held (only the task's real
        end releases it). Call it between steps, with no question outstanding."""
        if self._outstanding or self._answers:
            raise RuntimeError("a task cannot continue as new while a question is open")
        assert self.task is not None
        carried = Carried(
            state=self._current,
            progress=asdict(progress),
            cancel_message=self.cancel_message,
            issued_keys=tuple(self._issued_keys),
            answered_by=self.answered_by,
            webhooks_sent=self._notifications.sent,
            steering=self._steering_carried(),
            history_base=self._notifications.sequence(),
        )
        workflow.continue_as_new(
            replace(self.task, carried=carried.wire()), memo={MEMO_KEY: self._current.to_memo()}
        )

    async def ask(
        self,
        key: str,
        request: InputRequest,
        *,
        status_message: str | None = None,
        timeout: timedelta | None = None,  # noqa: ASYNC109 (a durable Temporal timer)
        approvers: list[str] | None = None,
    ) -> InputResponse:
        """Park at `input_required` until `key` is answered; return the client's response.

        With `timeout`, a durable timer withdraws the question when it fires and raises
        `TimeoutError` (the task goes back to `working`). With `approvers` (names, see
        mcp_tasks/contracts/approvers.py), only they may answer, and McpApprovers lists them
        meanwhile.
        """
        answers = await self.ask_all(
            {key: request}, status_message=status_message, timeout=timeout, approvers=approvers
        )
        return answers[key]

    async def ask_all(
        self,
        requests: dict[str, InputRequest],
        *,
        status_message: str | None = None,
        timeout: timedelta | None = None,  # noqa: ASYNC109 (a durable Temporal timer)
        approvers: list[str] | None = None,
    ) -> dict[str, InputResponse]:
        """Ask several questions at once; return when every one has been answered."""
        reused = [key for key in requests if key in self._issued_keys]
        if reused:
            raise ValueError(f"input request keys {reused} were already used in this task")
        asking = self._scrub({**self._outstanding, **requests})
        refuse_oversized(replace(self._current, input_requests=asking), list(requests))
        self._issued_keys.update(requests)
        self._outstanding.update(requests)
        previous_message = self._current.status_message
        if approvers:
            named = {**self._current.approvers, **{key: list(approvers) for key in requests}}
            self._change(approvers=named)
            who = describe_approvers(approvers)
            status_message = (
                f"{status_message}; awaiting the decision of {who}"
                if status_message
                else f"Waiting for the decision of {who}"
            )
        self._change(status_message=status_message or "Waiting for input")
        self._publish()
        self._notifications.send("input_required", self._current)
        # Why wait_condition and not a loop: the condition is re-evaluated only after a signal
        # changes state, and the wait itself survives worker restarts by replay.
        try:
            await workflow.wait_condition(
                lambda: all(key in self._answers for key in requests), timeout=timeout
            )
        except TimeoutError:
            for key in requests:
                self._outstanding.pop(key, None)
                self._answers.pop(key, None)
            self._change(status_message=previous_message or "Working")
            self._publish()
            raise
        answers = {key: InputResponse.read(self._answers.pop(key)) for key in requests}
        self._change(status_message=previous_message or "Working")
        self._publish()
        return answers

    async def safe_point(self) -> list[SteerMessage]:
        """A point where the tool may be paused and steered: hold here while the task is
        paused, then return the steer messages that arrived since the last safe point, oldest
        first. Issues no command unless the task was paused."""
        if self._paused:
            before = self._current.status_message or "Working"
            self.report(f"Paused: {before} (resume to go on)")
            # Why wait_condition: the resume is a signal; the wait survives worker restarts.
            await workflow.wait_condition(lambda: not self._paused)
            self.report(before)
        messages, self._steered = self._steered, []
        return messages

    def on_steer(self, message: SteerMessage) -> None:
        """Take a steer message in (queued for the next safe point)."""
        self._steered.append(message)

    def on_pause(self, paused: bool) -> None:
        """Take a pause (True) or a resume (False) in: the task shows it at once, and holds
        at its next safe point."""
        self.show_paused(paused)

    def show_paused(self, paused: bool) -> None:
        """Publish whether the task is paused (the memo's `paused`), if that changed."""
        if paused == self._paused:
            return
        self._paused = paused
        if self._state is not None:  # before run() starts, run() publishes it first
            self._change(paused=paused)
            self._publish()

    def _steering_carried(self) -> CarriedSteering | None:
        """What a continued run needs of the steering: nothing for a task never steered."""
        if not (self._steer_count or self._paused):
            return None
        return CarriedSteering(self._steer_count, self._paused, tuple(self._steered))

    def _take_steering(self, carried: CarriedSteering) -> None:
        """Go on from the previous run's steering; messages this run took in before run()
        started are numbered after the carried ones."""
        count = carried.count
        early = [replace(m, seq=count + n) for n, m in enumerate(self._steered, start=1)]
        self._steered = [*carried.queued, *early]
        self._steer_count = count + len(early)
        self._paused = self._paused or carried.paused

    # ----- Temporal handlers ------------------------------------------------------------

    @workflow.signal(name=STEER_SIGNAL)
    def steer(self, update: SteerInput) -> None:
        # Numbered as taken in: the order Temporal recorded the signals.
        self._steer_count += 1
        self.on_steer(SteerMessage(self._steer_count, update.message, update.by))

    @workflow.signal(name=PAUSE_SIGNAL)
    def pause(self, stamp: AuditStamp) -> None:
        del stamp  # who paused is in the history, as the signal's payload
        self.on_pause(True)

    @workflow.signal(name=RESUME_SIGNAL)
    def resume(self, stamp: AuditStamp) -> None:
        del stamp
        self.on_pause(False)

    @workflow.signal(name=SUBMIT_INPUT_SIGNAL)
    def submit_input(self, update: SubmitInput) -> None:
        # A signal, not an update: it is durable with no worker alive and survives a server
        # restart. Answers for keys that are not outstanding (never issued, already answered,
        # duplicated deliveries) are ignored, which makes redelivery harmless.
        accepted = [key for key in update.responses if key in self._outstanding]
        for key in accepted:
            self._answers[key] = update.responses[key]
            self.answered_by[key] = update.principal
            if update.by:
                self._change(answered_by={**self._current.answered_by, key: update.by})
            del self._outstanding[key]
        if accepted:
            self._publish()

    @workflow.signal(name=CANCEL_REQUESTED_SIGNAL)
    def cancel_requested(self, stamp: AuditStamp) -> None:
        # Sent by the server just before the cancellation request, which carries no payload:
        # the signal's payload in the history is the record of who cancelled. Nothing to do.
        del stamp

    @workflow.query(name=STATE_QUERY)
    def state(self) -> TaskMemo | None:
        """The live state, for operators (`temporal workflow query --name mcp.state`); set
        before any query can arrive (run() sets it before it first awaits)."""
        return self._state.to_memo() if self._state is not None else None

    # ----- the run wrapper --------------------------------------------------------------

    async def _run_task(self, task: TaskInput) -> dict[str, Any]:
        self.task = task
        self._redactor = Redactor.for_arguments(task.arguments, task.secret_arguments)
        # The starter wrote this memo with the start (or the previous run, with its
        # continue-as-new); keep it as our base without re-upserting.
        self._state = TaskState.initial(task, self.initial_status_message)
        carried = self._carried = Carried.read(task.carried)
        if carried is not None:
            self._state = carried.state or self._state
            self.cancel_message = carried.cancel_message or self.cancel_message
            self._issued_keys = set(carried.issued_keys)
            self.answered_by = dict(carried.answered_by)
            if carried.steering is not None:
                self._take_steering(carried.steering)
        if self._paused:  # paused before run() started: shown with the first publish
            self._change(paused=True)
        sent, base = (carried.webhooks_sent, carried.history_base) if carried else (0, 0)
        events_owner = task.owner if task.events else ""
        self._notifications = Notifications(task.task_id, task.webhooks, sent, base, events_owner)
        try:
            result = bounded(self._scrubbed_result(await self.execute(task)))
        except BaseException as err:
            if is_cancelled_exception(err):
                self._outstanding.clear()
                self._change(status_message=self.cancel_message)
                await self._notifications.closing("cancelled", self._scrubbed_state())
                self._publish(status="cancelled")
                raise
            if isinstance(err, FailureError):  # the task fails (anything else retries)
                failure = self._scrubbed_failure(err) if self._redactor else err
                message = f"Task failed: {failure_message(failure)}"
                ending = replace(self._current, status_message=message)
                await self._notifications.closing("failed", ending)
                if failure is not err:
                    raise failure from None
            elif isinstance(err, workflow.ContinueAsNewError):
                await self._notifications.settle()
            raise
        self._outstanding.clear()
        summary = _first_line(result.first_text)
        self._change(status_message=f"Completed: {summary}" if summary else "Completed")
        # Notified first: the final state and the close stay in one workflow task, so tasks/get
        # never reads a final status from a workflow that is still running.
        await self._notifications.closing("completed", self._scrubbed_state())
        self._publish(status="completed")
        return result.wire()

    def _scrubbed_result(self, result: ToolResult) -> ToolResult:
        if not self._redactor:
            return result
        return ToolResult.read(self._scrub(result.wire()))

    def _scrubbed_state(self) -> TaskState:
        return replace(self._current, status_message=self._scrub(self._current.status_message))

    @property
    def _current(self) -> TaskState:
        assert self._state is not None, "the task state exists once run() has started"
        return self._state

    def _change(self, **changes: Any) -> None:
        """Change the task state in memory; `_publish()` makes it visible."""
        self._state = replace(self._current, **changes)

    def _publish(self, status: TaskStatus | None = None) -> None:
        # Exactly one upsert_memo per call (and one upsert_search_attributes when the status
        # changes): running workflows replay these commands, so their number and order stay.
        if status is None:
            status = published_status(bool(self._outstanding))
        previous = self._current.status
        changed_status = status != previous
        if self._current.paused and status in ("completed", "cancelled"):
            self._change(paused=False)  # a closed task holds nowhere
        self._change(status=status, input_requests=dict(self._outstanding))
        if self._redactor:
            self._change(
                status_message=self._scrub(self._current.status_message),
                input_requests=self._scrub(self._current.input_requests),
            )
        self._change(last_updated_at=iso_timestamp(workflow.now()))
        workflow.upsert_memo({MEMO_KEY: self._current.to_memo()})
        if changed_status:
            waiting = self._waiting_since(previous, status)
            workflow.upsert_search_attributes([STATUS_KEY.value_set(status), *waiting])
        if self._current.approvers:  # only tasks that ever had approvers: no other commands
            ids = outstanding_ids(self._current.approvers, self._outstanding)
            if ids != self._approver_ids:
                workflow.upsert_search_attributes([APPROVERS_KEY.value_set(ids)])
                self._approver_ids = ids

    def _waiting_since(self, previous: TaskStatus, status: TaskStatus) -> list[Any]:
        """McpWaitingSince, set as the task starts waiting and removed as it stops, in the
        same upsert as McpStatus. Under WAITING_SINCE_PATCH: a history recorded before it
        replays that upsert without the attribute (the patch is asked only when the waiting
        changes, so a task that never waits records no marker)."""
        if "input_required" not in (previous, status) or not workflow.patched(WAITING_SINCE_PATCH):
            return []
        if status == "input_required":
            return [WAITING_SINCE_KEY.value_set(workflow.now())]
        return [WAITING_SINCE_KEY.value_unset()]

    def _scrub(self, value: Any) -> Any:
        """`value` with every secret argument's value replaced by "[redacted]"."""
        return self._redactor.value(value)

    def _scrubbed_failure(self, err: FailureError) -> ApplicationError:
        cause: BaseException = err
        while isinstance(cause, FailureError) and cause.cause is not None:
            cause = cause.cause
        message = self._scrub(getattr(cause, "message", None) or str(cause))
        if isinstance(err, ApplicationError) and err.type == PROTOCOL_ERROR_TYPE:
            return ApplicationError(
                message, *self._scrub(list(err.details)), type=err.type, non_retryable=True
            )
        return ApplicationError(message, type="TaskFailed", non_retryable=True)


def _first_line(text: str) -> str:
    """The first line of `text`, at most 200 characters."""
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= 200 else line[:199] + "…"


def task_workflow(name: str) -> Callable[[type[W]], type[W]]:
    """Declare a task workflow type. Supplies the `@workflow.run` method, which Temporal
    requires on the concrete class itself (it cannot be inherited)."""

    def declare(cls: type[W]) -> type[W]:
        async def run(self, task):  # type: ignore[no-untyped-def]  # annotated below
            return await self._run_task(task)

        run.__qualname__ = f"{cls.__qualname__}.run"
        run.__name__ = "run"
        run.__module__ = cls.__module__
        # Real objects, not strings: the SDK reads the input type from these to decode the
        # argument, and cannot resolve names from this module in the subclass's module.
        run.__annotations__ = {"task": TaskInput, "return": dict[str, Any]}
        cls.run = workflow.run(run)  # type: ignore[attr-defined]
        # The open-task quota slot goes back as execute() ends, before the final state.
        cls.execute = releasing_slot(cls.execute)  # type: ignore[method-assign,assignment]
        return workflow.defn(name=name)(cls)

    return declare
