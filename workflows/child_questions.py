"""The task workflow's side of the interactive contract (docs/reference/interactive-contract.md,
payloads in mcp_tasks/contracts/interactive.py): what the team's workflow, run as the task's
child (workflows/exposed.py), reports and asks.

Rules implemented:
- `mcp.report` sets the task's statusMessage and progress (TaskState.progress), published as
  any task's; a report without a message keeps the message, or says the step ("step 2 of 3",
  "40%") when there is none. A malformed report is logged and dropped.
- `mcp.ask` parks the task at `input_required` with the child's input requests, exactly as
  `ask_all()` does for a built-in tool (approvers, timeout, the memo size limit); a key the task
  used before is renamed for the client (`approve` -> `approve-2`) and answered back under the
  child's name. Every key answered, the responses (accept, decline or cancel, as the client
  sent them) go to the child as `mcp.answer`; a question refused (malformed, not a valid input
  request, too large) or withdrawn (its timeout passed) is answered with `error`, so the child
  never waits for an answer that cannot come.
- The handlers issue commands only when a signal arrives, so the histories of tasks whose
  child never speaks the contract replay unchanged.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from temporalio import workflow
from temporalio.exceptions import ApplicationError, FailureError

from mcp_tasks.contracts.approvers import invalid_approvers
from mcp_tasks.contracts.tool_messages import InputRequest
from workflows.task_workflow import TaskWorkflow

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from mcp_tasks.contracts.interactive import (
        ANSWER_SIGNAL,
        ASK_SIGNAL,
        REPORT_SIGNAL,
        AnswerError,
        AnswerInput,
        AskInput,
        ReportInput,
    )

FORM_TYPES = frozenset({"string", "number", "integer", "boolean", "array"})
INPUT_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})


def invalid_input_request(request: object) -> str | None:
    """Why `request` is not an input request a client can answer; None when it is one."""
    if not isinstance(request, dict):
        return "an input request must be an object"
    method = request.get("method")
    if method not in INPUT_METHODS:
        return f"method must be one of {sorted(INPUT_METHODS)}, not {method!r}"
    params = request.get("params", {})
    if not isinstance(params, dict):
        return "params must be an object"
    if method == "sampling/createMessage" and not isinstance(params.get("messages"), list):
        return "sampling/createMessage needs params.messages, an array"
    if method != "elicitation/create":
        return None
    if not isinstance(params.get("message"), str):
        return "elicitation/create needs params.message, a string"
    if params.get("mode", "form") == "url":
        return None if isinstance(params.get("url"), str) else "a url elicitation needs a url"
    schema = params.get("requestedSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "a form elicitation needs params.requestedSchema, an object schema"
    for name, prop in (properties or {}).items():
        if not isinstance(prop, dict) or prop.get("type") not in FORM_TYPES:
            return f"form property {name!r} needs a type, one of {sorted(FORM_TYPES)}"
    return None


def progress_text(progress: float, total: float | None) -> str:
    """What a report with progress but no message says: `step 2 of 3`, `40%`, `12`."""
    if total == 1:
        return f"{progress * 100:.0f}%"
    if total is not None:
        return f"step {progress:g} of {total:g}"
    return f"{progress:g}"


class ChildQuestions(TaskWorkflow):
    """Mixed into a task workflow whose child may speak the contract; `child_id` names it."""

    child_id = ""

    @workflow.signal(name=REPORT_SIGNAL)
    def child_report(self, payload: Any) -> None:
        try:
            report = ReportInput.model_validate(payload)
        except ValidationError as err:
            workflow.logger.warning("a malformed mcp.report was dropped: %s", err)
            return
        message = report.status_message
        if report.progress is not None:
            total = {} if report.total is None else {"total": report.total}
            self._change(progress={"progress": report.progress, **total})
            message = message or progress_text(report.progress, report.total)
        self.report(message or self._current.status_message or "Working")

    @workflow.signal(name=ASK_SIGNAL, unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def child_ask(self, payload: Any) -> None:
        # Long-running by design: the handler waits for the answers as ask_all() does; a task
        # that closes first (cancelled) abandons it, and the child is cancelled with it.
        if not isinstance(payload, dict):  # no question to answer: dropped, as it always was
            workflow.logger.warning("an mcp.ask that is not an object was dropped")
            return
        question_id = payload.get("questionId")
        try:
            ask = AskInput.model_validate(payload)
        except ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'payload'}: {e['msg']}" for e in err.errors()
            )
            return await self._refuse(str(question_id or ""), f"not a valid mcp.ask: {problems}")
        problem = _question_problem(ask)
        if problem:
            return await self._refuse(ask.question_id, problem)
        names: dict[str, str] = {}
        for key in ask.input_requests:
            names[self._client_key(key, names)] = key
        # Each checked by `_question_problem` (a method, its params), and carried as the team's
        # workflow sent it: the memo shows it unchanged.
        requests = {
            client: cast(InputRequest, ask.input_requests[key]) for client, key in names.items()
        }
        timeout = timedelta(seconds=ask.timeout_seconds) if ask.timeout_seconds else None
        try:
            answers = await self.ask_all(
                requests,
                status_message=ask.status_message,
                timeout=timeout,
                approvers=ask.approvers,
            )
        except TimeoutError:
            withdrawn = f"no answer within {ask.timeout_seconds:g} s: the question was withdrawn"
            return await self._refuse(ask.question_id, withdrawn, timed_out=True)
        except ApplicationError as err:  # too large for the memo (workflows/input_limits.py)
            return await self._refuse(ask.question_id, err.message)
        by = self._current.answered_by
        answer = AnswerInput(
            question_id=ask.question_id,
            input_responses={names[key]: response.raw for key, response in answers.items()},
            answered_by={names[key]: by[key] for key in answers if key in by} or None,
        )
        await self._tell_child(answer)

    def _client_key(self, key: str, taken: dict[str, str]) -> str:
        """`key`, or the first of `key-2`, `key-3`, ... neither issued in this task nor taken
        by another key of the same question."""
        candidate, n = key, 1
        while candidate in self._issued_keys or candidate in taken:
            n += 1
            candidate = f"{key}-{n}"
        return candidate

    async def _refuse(self, question_id: str, message: str, *, timed_out: bool = False) -> None:
        workflow.logger.warning(
            "question %r of %s answered with an error: %s", question_id, self.child_id, message
        )
        error = AnswerError(message=message, timed_out=timed_out or None)
        await self._tell_child(AnswerInput(question_id=question_id, error=error))

    async def _tell_child(self, answer: AnswerInput) -> None:
        try:
            await workflow.get_external_workflow_handle(self.child_id).signal(
                ANSWER_SIGNAL, answer.wire()
            )
        except FailureError as err:
            # The child closed meanwhile (it was cancelled, or gave up waiting): nobody to tell.
            workflow.logger.info("mcp.answer not delivered to %s: %s", self.child_id, err)


def _question_problem(ask: AskInput) -> str | None:
    """Why the server refuses `ask` as it is asked; None when the task may park on it."""
    if ask.approvers is not None and (problem := invalid_approvers(ask.approvers)):
        return problem
    for key, request in ask.input_requests.items():
        if problem := invalid_input_request(request):
            return f"input request {key!r}: {problem}"
    return None
