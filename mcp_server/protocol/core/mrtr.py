"""Multi round-trip requests of tools/call: gathering a tool's input over rounds (wire §1.6).

Rules implemented:
- A tool's `mrtr` says, from the arguments, this request's client capabilities and the answers
  gathered so far, which input requests it still needs; the tool runs once it needs none.
- The answers of earlier rounds travel in `requestState`, HMAC-signed, expiring, and bound to
  the tool, a digest of the arguments and the principal; a state of another call is -32602.
  It changes every round, since it carries what was answered so far.
- Each answer is validated against the request it answers: -32602 when it cannot be one.
  The server keeps no state between rounds, so the request a retry answers is recomputed from
  the answers the state carries (`mrtr` is a pure function of its inputs).
- Keys the server did not ask are ignored; a missing answer is asked again, not an error.
- An input request needs the client capability of its method (elicitation, sampling, roots);
  when the request did not declare it, the call is -32021 (requiredCapabilities names it).
- A state that names a task continues the questions of that task, run attached to the call
  (attached/rounds.py): `attached_task` returns it, bound as a tool's own MRTR state is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_server.protocol.core import capabilities
from mcp_server.protocol.frame.errors import invalid_params
from mcp_server.protocol.frame.models import check_input_response
from mcp_server.protocol.frame.request_state import (
    PendingRound,
    RequestStateCodec,
    canonical_digest,
)
from mcp_server.protocol.limits.per_principal import Limits
from mcp_server.tools.registry import InputRequests, MrtrRound, Tool


@dataclass(frozen=True)
class Gathered:
    """Every input the tool asked for is answered: it can run with these answers."""

    answers: dict[str, Any]


@dataclass(frozen=True)
class InputRequired:
    """Input is still missing: the InputRequiredResult to send back."""

    input_requests: InputRequests
    request_state: str


@dataclass(frozen=True)
class Round:
    """One tools/call as MRTR sees it."""

    tool: Tool
    arguments: dict[str, Any]
    client_capabilities: dict[str, Any]
    principal: str
    # params.requestState and params.inputResponses, as they came (None when absent).
    request_state: object
    input_responses: object


def gather(call: Round, codec: RequestStateCodec, limits: Limits) -> Gathered | InputRequired:
    """The answers the tool needs, or the input requests still missing."""
    if call.tool.mrtr is None:
        return Gathered({})  # a tool that asks nothing ignores MRTR parameters
    digest = canonical_digest(call.arguments)
    answers = _earlier_answers(call, codec, digest)
    responses = responses_of(call.input_responses, limits)

    def needed() -> InputRequests:
        return call.tool.still_needed(
            call.arguments, MrtrRound(call.client_capabilities, dict(answers))
        )

    # A retry answers the round the requests were computed for; an answer may in turn make the
    # next round's requests answerable by the same retry, so consume until nothing matches.
    requests = needed()
    while fresh := {key: responses.pop(key) for key in list(requests) if key in responses}:
        for key, response in fresh.items():
            error = check_input_response(key, requests[key], response)
            if error is not None:
                raise error
        answers.update(fresh)
        requests = needed()
    if not requests:
        return Gathered(answers)
    for request in requests.values():
        capabilities.require(
            call.client_capabilities,
            capabilities.required_for_input(request),
            f"tool {call.tool.name!r} needs to ask the client for input",
        )
    pending = PendingRound(call.tool.name, digest, call.principal, answers)
    return InputRequired(requests, codec.encode(pending))


def attached_task(call: Round, codec: RequestStateCodec) -> PendingRound | None:
    """The round of an attached task this retry answers, or None when its state (if any) is a
    tool's own. -32602 for a state of another call."""
    if call.request_state is None:
        return None
    pending = _bound(call, codec, canonical_digest(call.arguments))
    return pending if pending.task_id else None


def _bound(call: Round, codec: RequestStateCodec, digest: str) -> PendingRound:
    pending = codec.decode(call.request_state)
    if (pending.tool, pending.arguments_digest, pending.principal) != (
        call.tool.name,
        digest,
        call.principal,
    ):
        raise invalid_params("requestState belongs to a different call; call the tool again")
    return pending


def _earlier_answers(call: Round, codec: RequestStateCodec, digest: str) -> dict[str, Any]:
    if call.request_state is None:
        return {}
    pending = _bound(call, codec, digest)
    if pending.task_id:  # a task's round: its answers went to the task, not to the tool's MRTR
        raise invalid_params("requestState belongs to a different call; call the tool again")
    return dict(pending.answers)


def responses_of(value: object, limits: Limits) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_params("params.inputResponses must be an object")
    if value:
        limits.check_input_responses(value)
    return dict(value)
