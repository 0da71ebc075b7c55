"""The interactive contract's one definition (mcp_tasks/contracts/interactive.py) and the JSON
Schema generated from it: the file in the repository is what the models say, and the payloads
the page documents are valid against it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mcp_tasks.contracts import interactive
from mcp_tasks.contracts.interactive import (
    AnswerInput,
    AskInput,
    SteerInput,
    is_call_tool_result,
    rendered_schema,
)

SCHEMA_FILE = (
    Path(__file__).resolve().parents[2] / "mcp_tasks" / "contracts" / "interactive.schema.json"
)


def validator(signal: str) -> Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text())
    return Draft202012Validator({**schema, "$ref": schema["signals"][signal]})


def test_the_schema_file_is_the_one_the_models_generate() -> None:
    # Stale: regenerate with `.venv/bin/python .ci/interactive_schema.py --write`.
    assert SCHEMA_FILE.read_text() == rendered_schema()


def test_every_signal_of_the_page_has_a_schema() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    Draft202012Validator.check_schema(schema)
    assert set(schema["signals"]) == {
        "mcp.report",
        "mcp.ask",
        "mcp.paused",
        "mcp.answer",
        "mcp.steer",
        "mcp.pause",
        "mcp.resume",
    }
    assert schema["toolErrorType"] == "McpToolError"


APPROVE = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Switch traffic?",
        "requestedSchema": {"type": "object", "properties": {"approve": {"type": "boolean"}}},
    },
}
VALID = [
    ("mcp.report", {"v": 1, "statusMessage": "step 2/3: migrate", "progress": 2, "total": 3}),
    ("mcp.report", {"v": 1, "progress": 0.5, "total": 1}),
    ("mcp.ask", {"v": 1, "questionId": "q1", "inputRequests": {"approve": APPROVE}}),
    (
        "mcp.ask",
        {
            "v": 1,
            "questionId": "q1",
            "inputRequests": {"approve": APPROVE},
            "approvers": ["scope:release"],
            "timeoutSeconds": 3600,
        },
    ),
    ("mcp.paused", {"v": 1, "paused": True}),
    (
        "mcp.answer",
        {"v": 1, "questionId": "q1", "inputResponses": {"approve": {"action": "decline"}}},
    ),
    (
        "mcp.answer",
        {"v": 1, "questionId": "q1", "error": {"message": "withdrawn", "timedOut": True}},
    ),
    ("mcp.steer", {"v": 1, "seq": 1, "message": "skip the canary", "from": "alice"}),
    ("mcp.pause", {"v": 1}),
    ("mcp.resume", {"v": 1}),
    # A later version's sender: an unknown field is allowed (and ignored by receivers).
    ("mcp.report", {"v": 2, "statusMessage": "x", "eta": "soon"}),
]
INVALID = [
    ("mcp.report", {"statusMessage": "no version"}),
    ("mcp.report", {"v": 1, "progress": -1}),
    ("mcp.ask", {"v": 1, "questionId": "q1", "inputRequests": {}}),
    ("mcp.ask", {"v": 1, "questionId": "", "inputRequests": {"a": APPROVE}}),
    ("mcp.ask", {"v": 1, "questionId": "q1", "inputRequests": {"a": APPROVE}, "timeoutSeconds": 0}),
    ("mcp.paused", {"v": 1}),
    ("mcp.steer", {"v": 1, "seq": 0, "message": "m"}),
]


@pytest.mark.parametrize(("signal", "payload"), VALID)
def test_the_payloads_of_the_page_are_valid(signal: str, payload: dict[str, Any]) -> None:
    assert not list(validator(signal).iter_errors(payload))
    model = interactive.SIGNALS[signal].model_validate(payload)
    assert validator(signal).is_valid(model.wire())


@pytest.mark.parametrize(("signal", "payload"), INVALID)
def test_malformed_payloads_are_invalid(signal: str, payload: dict[str, Any]) -> None:
    assert list(validator(signal).iter_errors(payload))


def test_python_names_are_snake_case_and_the_wire_camel_case() -> None:
    ask = AskInput(question_id="q", input_requests={"a": APPROVE}, timeout_seconds=5)
    assert ask.wire() == {
        "v": 1,
        "questionId": "q",
        "inputRequests": {"a": APPROVE},
        "timeoutSeconds": 5,
    }
    assert SteerInput(seq=1, message="m", sender="bob").wire()["from"] == "bob"
    answer = AnswerInput.model_validate({"v": 1, "questionId": "q", "answeredBy": {"a": "x"}})
    assert answer.answered_by == {"a": "x"} and answer.error is None


@pytest.mark.parametrize(
    ("value", "passed_on"),
    [
        ({"content": [{"type": "text", "text": "done"}]}, True),
        ({"content": [], "structuredContent": {"a": 1}, "isError": False, "_meta": {}}, True),
        ({"content": [{"type": "text", "text": "x"}], "other": 1}, False),
        ({"content": "not a list"}, False),
        ({"structuredContent": {}}, False),
        ("text", False),
    ],
)
def test_only_the_shape_of_a_call_tool_result_is_passed_on(value: Any, passed_on: bool) -> None:
    assert is_call_tool_result(value) is passed_on
