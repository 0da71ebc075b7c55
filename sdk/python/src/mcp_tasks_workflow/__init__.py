"""Your Temporal workflow as an interactive MCP task (mcp-tasks-temporal's interactive contract,
v1): report progress, ask questions and wait for the answers, be steered and paused.

Call these from inside your workflow, run as the child of an MCP task (an entry of the
server's exposed-workflows file); they exchange signals with the task workflow, its parent:

    from mcp_tasks_workflow import ToolError, approve, report, tool_result

    @workflow.defn
    class Migrate:
        @workflow.run
        async def run(self, args: dict) -> dict:
            await report("step 1 of 2: copy", progress=1, total=2)
            if not (await approve("Switch traffic to the new database?")).approved:
                raise ToolError("Not switched: the switch was declined")
            await report("step 2 of 2: switch", progress=2, total=2)
            return tool_result("Switched", {"switched": True})

The helper depends on `temporalio` alone and runs inside the workflow sandbox: every call is
deterministic workflow code (signals and conditions), so it replays like the rest of your
workflow. Its state lives on your workflow instance, one per run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

__all__ = [
    "Answer",
    "QuestionError",
    "Steer",
    "ToolError",
    "approve",
    "ask",
    "elicitation",
    "next_steer",
    "report",
    "safe_point",
    "steer_messages",
    "tool_result",
]

VERSION = 1
REPORT_SIGNAL = "mcp.report"
ASK_SIGNAL = "mcp.ask"
PAUSED_SIGNAL = "mcp.paused"
ANSWER_SIGNAL = "mcp.answer"
STEER_SIGNAL = "mcp.steer"
PAUSE_SIGNAL = "mcp.pause"
RESUME_SIGNAL = "mcp.resume"
TOOL_ERROR_TYPE = "McpToolError"
FORM_TYPES = ("string", "number", "integer", "boolean", "array")


class ToolError(ApplicationError):
    """Raise it to end the task with a tool error (`isError`) saying `message`; `structured`
    becomes the result's `structuredContent`."""

    def __init__(self, message: str, structured: Mapping[str, Any] | None = None) -> None:
        details = [dict(structured)] if structured is not None else []
        super().__init__(message, *details, type=TOOL_ERROR_TYPE, non_retryable=True)


class QuestionError(Exception):
    """The task refused the question (`timed_out` False: e.g. not a valid input request) or
    withdrew it (`timed_out` True: nobody answered within its timeout)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


@dataclass(frozen=True)
class Answer:
    """The answer to one input request: the spec's InputResponse, and who gave it."""

    action: str  # "accept", "decline" or "cancel"
    content: dict[str, Any] = field(default_factory=dict)
    answered_by: str | None = None

    @property
    def approved(self) -> bool:
        """Accepted with every boolean of the form true (an approval's one checkbox)."""
        booleans = [value for value in self.content.values() if isinstance(value, bool)]
        return self.action == "accept" and bool(booleans) and all(booleans)


@dataclass(frozen=True)
class Steer:
    """A message a client sent the task (`seq` from 1, in the order sent)."""

    seq: int
    message: str
    sender: str | None = None


@dataclass
class _Conversation:
    """What the helper keeps for one workflow run (on its instance)."""

    questions: int = 0
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    steers: dict[int, Steer] = field(default_factory=dict)
    next_seq: int = 1
    paused: bool = False
    installed: bool = False


def _conversation() -> _Conversation:
    instance = workflow.instance()
    found = getattr(instance, "_mcp_tasks_workflow", None)
    if isinstance(found, _Conversation):
        return found
    created = _Conversation()
    instance._mcp_tasks_workflow = created
    return created


def _installed() -> _Conversation:
    """The run's conversation, with the handlers of the task's signals set. Signals that came
    before are buffered by Temporal and delivered as the handlers are set."""
    talk = _conversation()
    if talk.installed:
        return talk
    talk.installed = True

    def on_answer(payload: dict[str, Any]) -> None:
        if isinstance(payload, dict) and isinstance(payload.get("questionId"), str):
            talk.answers[payload["questionId"]] = payload

    def on_steer(payload: dict[str, Any]) -> None:
        seq, message = payload.get("seq"), payload.get("message")
        if isinstance(seq, int) and seq >= talk.next_seq and isinstance(message, str):
            sender = payload.get("from")
            talk.steers[seq] = Steer(seq, message, sender if isinstance(sender, str) else None)

    def on_pause(payload: dict[str, Any]) -> None:
        talk.paused = True

    def on_resume(payload: dict[str, Any]) -> None:
        talk.paused = False

    workflow.set_signal_handler(ANSWER_SIGNAL, on_answer)
    workflow.set_signal_handler(STEER_SIGNAL, on_steer)
    workflow.set_signal_handler(PAUSE_SIGNAL, on_pause)
    workflow.set_signal_handler(RESUME_SIGNAL, on_resume)
    return talk


def _task_workflow_id() -> str | None:
    parent = workflow.info().parent
    return parent.workflow_id if parent is not None else None


async def _tell_task(signal: str, payload: dict[str, Any]) -> None:
    task_id = _task_workflow_id()
    if task_id is None:
        raise RuntimeError(
            f"{workflow.info().workflow_type} is not running as an MCP task (it has no parent "
            f"workflow): there is no task to send {signal} to"
        )
    await workflow.get_external_workflow_handle(task_id).signal(signal, {"v": VERSION, **payload})


async def report(
    message: str | None = None, *, progress: float | None = None, total: float | None = None
) -> None:
    """Set the task's statusMessage and progress (`progress` of `total`: a step n of m, or a
    fraction with `total=1`). Outside an MCP task (no parent workflow) it does nothing, so the
    workflow still runs on its own."""
    if _task_workflow_id() is None:
        return
    payload: dict[str, Any] = {}
    if message is not None:
        payload["statusMessage"] = message
    if progress is not None:
        payload["progress"] = progress
    if total is not None:
        payload["total"] = total
    await _tell_task(REPORT_SIGNAL, payload)


def elicitation(
    message: str, properties: Mapping[str, Mapping[str, Any]], required: list[str] | None = None
) -> dict[str, Any]:
    """A form-mode `elicitation/create` input request; every property needs a `type`."""
    for name, prop in properties.items():
        if prop.get("type") not in FORM_TYPES:
            raise ValueError(f"form property {name!r} needs a type, one of {FORM_TYPES}")
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {k: dict(v) for k, v in properties.items()},
    }
    if required:
        schema["required"] = list(required)
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


async def ask(
    input_requests: Mapping[str, Mapping[str, Any]],
    *,
    status_message: str | None = None,
    approvers: list[str] | None = None,
    timeout: timedelta | None = None,  # noqa: ASYNC109 (the task's durable timer)
) -> dict[str, Answer]:
    """Ask the task's client(s) one or several questions and wait for every answer.

    Returns key -> Answer (accept with the form's content, decline or cancel). `approvers`
    names who may answer, as tools name them (a subject, or `scope:NAME`). Raises
    QuestionError when the task refuses the question or withdraws it after `timeout`.
    A cancellation of the task reaches you here as asyncio.CancelledError."""
    talk = _installed()
    talk.questions += 1
    question_id = f"q{talk.questions}"
    payload: dict[str, Any] = {
        "questionId": question_id,
        "inputRequests": {key: dict(request) for key, request in input_requests.items()},
    }
    if status_message is not None:
        payload["statusMessage"] = status_message
    if approvers is not None:
        payload["approvers"] = list(approvers)
    if timeout is not None:
        payload["timeoutSeconds"] = timeout.total_seconds()
    await _tell_task(ASK_SIGNAL, payload)
    # The wait needs no timer of its own: the task withdraws a timed-out question with an
    # error answer, so the one timer lives where the question is shown.
    await workflow.wait_condition(lambda: question_id in talk.answers)
    answer = talk.answers.pop(question_id)
    error = answer.get("error")
    if isinstance(error, dict):
        raise QuestionError(str(error.get("message")), timed_out=error.get("timedOut") is True)
    by = answer.get("answeredBy") or {}
    return {
        key: Answer(
            action=str(response.get("action")),
            content=dict(response.get("content") or {}),
            answered_by=by.get(key),
        )
        for key, response in (answer.get("inputResponses") or {}).items()
    }


async def approve(
    message: str,
    *,
    approvers: list[str] | None = None,
    timeout: timedelta | None = None,  # noqa: ASYNC109 (the task's durable timer)
    key: str = "approve",
) -> Answer:
    """Ask for a one-checkbox approval, saying in `message` what you will do; `.approved` is
    True only when it was accepted with the box ticked."""
    request = elicitation(message, {key: {"type": "boolean", "title": message}}, [key])
    answers = await ask(
        {key: request}, status_message=message, approvers=approvers, timeout=timeout
    )
    return answers[key]


def tool_result(text: str, structured: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return this from your workflow: the tool's CallToolResult, as it is."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = dict(structured)
    return result


def steer_messages() -> list[Steer]:
    """The steer messages received since the last call, in the order the clients sent them
    (a message that arrived before an earlier one waits for it)."""
    talk = _installed()
    delivered = []
    while talk.next_seq in talk.steers:
        delivered.append(talk.steers.pop(talk.next_seq))
        talk.next_seq += 1
    return delivered


async def next_steer() -> Steer:
    """Wait for the next steer message, in the order the clients sent them."""
    talk = _installed()
    await workflow.wait_condition(lambda: talk.next_seq in talk.steers)
    steer = talk.steers.pop(talk.next_seq)
    talk.next_seq += 1
    return steer


async def safe_point() -> None:
    """Call where your workflow may stop: while the task is paused it holds here (telling the
    task with `mcp.paused`), and returns once it is resumed."""
    talk = _installed()
    if not talk.paused:
        return
    await _tell_task(PAUSED_SIGNAL, {"paused": True})
    await workflow.wait_condition(lambda: not talk.paused)
    await _tell_task(PAUSED_SIGNAL, {"paused": False})
