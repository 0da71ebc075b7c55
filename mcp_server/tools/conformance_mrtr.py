"""Fixture tools of the conformance suite's `input-required-result-*` scenarios (MRTR, wire §1.6).

Each asks for input through its `mrtr` (mcp_server/protocol/core/mrtr.py does the rounds), then
answers synchronously with what it was told. The keys and questions are the ones the suite's
scenarios name (src/scenarios/server/input-required-result.ts).
"""

from __future__ import annotations

from typing import Any

from mcp_server.tools.registry import (
    InputRequests,
    Mrtr,
    MrtrRound,
    SyncHandler,
    Tool,
    ToolCall,
    ToolRegistry,
)
from mcp_tasks.contracts.tool_messages import InputRequest, InputResponse, ToolResult
from workflows.results import text_result
from workflows.task_workflow import elicitation

_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}

_NAME = elicitation("What is your name?", {"name": {"type": "string"}}, ["name"])
_CONFIRM = elicitation("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])
_ROOTS: InputRequest = {"method": "roots/list", "params": {}}


def _sampling(text: str, max_tokens: int) -> InputRequest:
    message = {"role": "user", "content": {"type": "text", "text": text}}
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [message], "maxTokens": max_tokens},
    }


def _field(answer: Any, name: str) -> Any:
    """A field of an accepted elicitation's content; None when declined or absent."""
    response = InputResponse.read(answer)
    return response.content.get(name) if response.accepted else None


def _sampled(answer: Any) -> str:
    content = answer.get("content") if isinstance(answer, dict) else None
    blocks = content if isinstance(content, list) else [content]
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    return " ".join(str(t) for t in texts if t) or "(no text)"


def _roots(answer: Any) -> str:
    roots = answer.get("roots") if isinstance(answer, dict) else None
    uris = [r.get("uri") for r in roots or [] if isinstance(r, dict)]
    return ", ".join(str(u) for u in uris) or "(none)"


async def _greet_by_name(call: ToolCall) -> ToolResult:
    return text_result(f"Hello, {_field(call.input_responses['user_name'], 'name')}!")


async def _capital(call: ToolCall) -> ToolResult:
    return text_result(f"The model answered: {_sampled(call.input_responses['capital_question'])}")


async def _list_roots(call: ToolCall) -> ToolResult:
    return text_result(f"The client's roots: {_roots(call.input_responses['client_roots'])}")


async def _request_state(call: ToolCall) -> ToolResult:
    # mrtr.py verified the signed requestState (tool, arguments, principal, expiry) on the retry.
    return text_result(f"state-ok: confirmed ok={_field(call.input_responses['confirm'], 'ok')}")


async def _summary(call: ToolCall) -> ToolResult:
    answers = call.input_responses
    parts = []
    if "user_name" in answers:
        parts.append(f"name {_field(answers['user_name'], 'name')}")
    if "greeting" in answers:
        parts.append(f"greeting {_sampled(answers['greeting'])!r}")
    if "client_roots" in answers:
        parts.append(f"roots {_roots(answers['client_roots'])}")
    return text_result(f"Received {', '.join(parts)}")


def _multi_round_mrtr(arguments: dict[str, Any], so_far: MrtrRound) -> InputRequests:
    # Round 2's question depends on round 1's answer: one question per round.
    if "step1" not in so_far.answers:
        return {
            "step1": elicitation(
                "Step 1: What is your name?", {"name": {"type": "string"}}, ["name"]
            )
        }
    if "step2" not in so_far.answers:
        name = _field(so_far.answers["step1"], "name") or "stranger"
        question = f"Step 2: What is your favorite color, {name}?"
        return {"step2": elicitation(question, {"color": {"type": "string"}}, ["color"])}
    return {}


async def _multi_round(call: ToolCall) -> ToolResult:
    name = _field(call.input_responses["step1"], "name")
    color = _field(call.input_responses["step2"], "color")
    return text_result(f"{name}'s favorite color is {color}")


def _capabilities_mrtr(arguments: dict[str, Any], so_far: MrtrRound) -> InputRequests:
    """Asks through every capability the client declared; with none, elicitation (-32021)."""
    declared = so_far.client_capabilities
    wanted: InputRequests = {}
    if "sampling" in declared:
        wanted["greeting"] = _sampling("Generate a greeting", 50)
    if "roots" in declared:
        wanted["client_roots"] = _ROOTS
    if "elicitation" in declared or not wanted:
        wanted["user_name"] = _NAME
    return {key: request for key, request in wanted.items() if key not in so_far.answers}


def register(registry: ToolRegistry) -> None:
    def add(name: str, description: str, handler: SyncHandler, mrtr: Mrtr) -> None:
        registry.add(Tool(name, description, _EMPTY, handler=handler, mrtr=mrtr))

    add(
        "test_input_required_result_elicitation",
        "Asks the user's name (elicitation), then greets them.",
        _greet_by_name,
        lambda arguments: {"user_name": _NAME},
    )
    add(
        "test_input_required_result_sampling",
        "Asks the client's model a question (sampling), then reports its answer.",
        _capital,
        lambda arguments: {"capital_question": _sampling("What is the capital of France?", 100)},
    )
    add(
        "test_input_required_result_list_roots",
        "Asks the client's roots (roots/list), then lists them.",
        _list_roots,
        lambda arguments: {"client_roots": _ROOTS},
    )
    add(
        "test_input_required_result_request_state",
        "Asks for a confirmation; the retry's signed requestState is verified.",
        _request_state,
        lambda arguments: {"confirm": _CONFIRM},
    )
    add(
        "test_input_required_result_multiple_inputs",
        "Asks for a name, a sampled greeting and the roots in one round.",
        _summary,
        lambda arguments: {
            "user_name": _NAME,
            "greeting": _sampling("Generate a greeting", 50),
            "client_roots": _ROOTS,
        },
    )
    add(
        "test_input_required_result_multi_round",
        "Asks a name, then (a second round) a favorite color.",
        _multi_round,
        _multi_round_mrtr,
    )
    add(
        "test_input_required_result_tampered_state",
        "Asks for a confirmation; a tampered requestState is rejected with -32602.",
        _request_state,
        lambda arguments: {"confirm": _CONFIRM},
    )
    add(
        "test_input_required_result_capabilities",
        "Asks only through the capabilities the request declares.",
        _summary,
        _capabilities_mrtr,
    )
