"""The interactive workflow contract (v1): the signals and JSON payloads by which a team's own
workflow, in any Temporal SDK, reports, asks, is answered, steered and paused
(docs/reference/interactive-contract.md is the page; this module is the one definition).

`interactive.schema.json`, beside this file, is generated from these models, for the helpers
and the teams that speak the contract from another SDK. Regenerate it after a change:

    .venv/bin/python .ci/interactive_schema.py --write

Rules implemented:
- Every payload is one JSON object with `"v": 1`, camelCase keys. A later version only adds
  optional fields, and a receiver ignores the fields it does not know (old senders keep
  working): the models accept any `v` >= 1 and drop unknown keys.
- `mcp.report`, `mcp.ask`, `mcp.paused` go from the team's workflow to the task workflow (its
  parent); `mcp.answer`, `mcp.steer`, `mcp.pause`, `mcp.resume` go back.
- A result of the shape of a `CallToolResult` (a `content` array and only the result's own
  keys) is the tool's result as it is; a failure of type `McpToolError` is a tool error.
Pure data (pydantic only, no I/O): the worker passes it through its sandbox.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from mcp_tasks.contracts.tool_messages import CALL_TOOL_RESULT_KEYS

CONTRACT_VERSION = 1
# The team's workflow -> the task workflow.
REPORT_SIGNAL = "mcp.report"
ASK_SIGNAL = "mcp.ask"
PAUSED_SIGNAL = "mcp.paused"
# The task workflow -> the team's workflow.
ANSWER_SIGNAL = "mcp.answer"
STEER_SIGNAL = "mcp.steer"
PAUSE_SIGNAL = "mcp.pause"
RESUME_SIGNAL = "mcp.resume"
# The application error type of a failure that is the tool's error, not a crash.
TOOL_ERROR_TYPE = "McpToolError"
SCHEMA_FILE_NAME = "interactive.schema.json"


class _Payload(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown fields are ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )

    v: int = Field(default=CONTRACT_VERSION, ge=1, description="The contract version; 1 today.")

    def wire(self) -> dict[str, Any]:
        """The JSON object sent, without the fields left unset."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ReportInput(_Payload):
    """`mcp.report`: the task's statusMessage and progress (`progress` of `total`)."""

    status_message: str | None = None
    progress: float | None = Field(default=None, ge=0)
    total: float | None = Field(default=None, gt=0)


class AskInput(_Payload):
    """`mcp.ask`: questions the task parks at `input_required` for, until each is answered."""

    question_id: str = Field(min_length=1, description="Unique within the asking workflow run.")
    input_requests: dict[str, dict[str, Any]] = Field(
        min_length=1,
        description="Key -> the spec's InputRequest, e.g. a form-mode elicitation/create.",
    )
    status_message: str | None = None
    approvers: list[str] | None = Field(
        default=None,
        description="Who may answer, named as tools name them (a subject or scope:NAME).",
    )
    timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="Withdraw the question after this long (answered with error).",
    )


class PausedInput(_Payload):
    """`mcp.paused`: the workflow holds at a safe point (true) or goes on (false)."""

    paused: bool


class AnswerError(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )

    message: str
    timed_out: bool | None = None


class AnswerInput(_Payload):
    """`mcp.answer`: every key of a question answered (`inputResponses`), or `error`."""

    question_id: str
    input_responses: dict[str, dict[str, Any]] | None = Field(
        default=None,
        description='Key -> the spec\'s InputResponse: {"action": "accept", "content": {...}},'
        ' {"action": "decline"} or {"action": "cancel"}.',
    )
    answered_by: dict[str, str] | None = None
    error: AnswerError | None = None


class SteerInput(_Payload):
    """`mcp.steer`: a message for the workflow, `seq` from 1 in the order sent."""

    model_config = ConfigDict(
        alias_generator=lambda name: "from" if name == "sender" else to_camel(name),
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )

    seq: int = Field(ge=1)
    message: str
    sender: str | None = None


class PauseInput(_Payload):
    """`mcp.pause`: hold at the next safe point."""


class ResumeInput(_Payload):
    """`mcp.resume`: go on."""


SIGNALS: dict[str, type[_Payload]] = {
    REPORT_SIGNAL: ReportInput,
    ASK_SIGNAL: AskInput,
    PAUSED_SIGNAL: PausedInput,
    ANSWER_SIGNAL: AnswerInput,
    STEER_SIGNAL: SteerInput,
    PAUSE_SIGNAL: PauseInput,
    RESUME_SIGNAL: ResumeInput,
}


def is_call_tool_result(value: Any) -> bool:
    """Whether a workflow's return value is a CallToolResult to pass on as it is: a `content`
    array and no key a CallToolResult does not have."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("content"), list)
        and all(isinstance(block, dict) for block in value["content"])
        and set(value) <= CALL_TOOL_RESULT_KEYS
    )


class _WireSchema(GenerateJsonSchema):
    """An optional field is left out of the JSON, never sent as null: its schema is the
    value's own, without `null` and without the Python default."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        default = schema.get("default")
        return inner if default is None else {**inner, "default": default}

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every payload, under `$defs`, with the signal each one travels as."""
    models: list[tuple[type[BaseModel], Literal["validation"]]] = [
        (model, "validation") for model in SIGNALS.values()
    ]
    _, top = models_json_schema(
        models, ref_template="#/$defs/{model}", schema_generator=_WireSchema
    )
    definitions: dict[str, Any] = top["$defs"]
    for definition in definitions.values():
        # Python senders get v=1 by default; on the wire every payload carries it.
        if "v" in definition.get("properties", {}):
            definition["required"] = ["v", *definition.get("required", [])]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/mcp-tasks-temporal/interactive.schema.json",
        "title": f"The interactive workflow contract (v{CONTRACT_VERSION})",
        "description": "Signal payloads between an MCP task workflow and the team's workflow "
        "it runs as a child (docs/reference/interactive-contract.md). Generated by "
        "`python .ci/interactive_schema.py --write`.",
        "signals": {name: f"#/$defs/{model.__name__}" for name, model in SIGNALS.items()},
        "toolErrorType": TOOL_ERROR_TYPE,
        "$defs": definitions,
    }


def rendered_schema() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
