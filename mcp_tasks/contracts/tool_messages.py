"""What a tool's workflow exchanges with the client through its task: the input requests it
asks (`InputRequest`), the responses it gets back (`InputResponse`) and its result
(`ToolResult`).

Typed in Python, JSON on the wire: the memo carries the requests, the `mcp.submit_input` signal
the responses, the workflow's result the CallToolResult, each in the spec's shape, so running
tasks and recorded histories read the same. The interactive contract
(mcp_tasks/contracts/interactive.py) carries the same requests and responses, as JSON, between
a task and a team's workflow.

Rules implemented:
- A response is read whatever the client sent: for an elicitation it is the spec's
  ElicitResult (`action`, and the form's `content` when accepted); for a sampling or roots
  request its result stays whole in `raw`.
- `ToolResult.wire()` is the CallToolResult a task's workflow returns: `resultType`, `content`,
  `isError`, and `structuredContent` and `_meta` only when set.
Pure data: safe to import inside the workflow sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict, get_args

# The keys a CallToolResult may have (a ToolResult's fields, as `wire()` names them).
CALL_TOOL_RESULT_KEYS = frozenset({"content", "structuredContent", "isError", "_meta"})
ElicitAction = Literal["accept", "decline", "cancel"]
ELICIT_ACTIONS: frozenset[str] = frozenset(get_args(ElicitAction))


# A JSON object whose shape the spec leaves open (`{ [key: string]: unknown }`): a result's
# `structuredContent` and `_meta`, a form's property schemas, an answer's form values.
JsonObject = dict[str, Any]


class InputRequest(TypedDict):
    """The spec's InputRequest: a server-to-client request a task parks on, e.g.
    {"method": "elicitation/create", "params": {"mode": "form", ...}}. A JSON object at
    runtime, not a model: the memo, the MRTR rounds of tools/call and the interactive contract
    carry it as it is."""

    method: str
    params: NotRequired[JsonObject]


@dataclass(frozen=True)
class InputResponse:
    """A client's response to one input request (the spec's InputResponse)."""

    # An elicitation's answer (the spec's ElicitResult); None for any other request.
    action: ElicitAction | None
    # The accepted form's values ({} when declined, cancelled, or not an object).
    content: JsonObject
    # The response as the client sent it: a sampling result's `content`, a roots result's
    # `roots` are read from here.
    raw: dict[str, Any]

    @property
    def accepted(self) -> bool:
        return self.action == "accept"

    @classmethod
    def read(cls, value: object) -> InputResponse:
        raw = dict(value) if isinstance(value, dict) else {}
        action, content = raw.get("action"), raw.get("content")
        return cls(
            action=action if action in ELICIT_ACTIONS else None,
            content=dict(content) if isinstance(content, dict) else {},
            raw=raw,
        )


@dataclass(frozen=True)
class ToolResult:
    """A tool's CallToolResult, as its task's workflow returns it."""

    # The content blocks, as JSON (e.g. {"type": "text", "text": "..."}).
    content: list[dict[str, Any]]
    structured_content: JsonObject | None = None
    is_error: bool = False
    meta: JsonObject | None = None

    @classmethod
    def read(cls, value: dict[str, Any]) -> ToolResult:
        """A CallToolResult as JSON (a team's workflow returned it as it is)."""
        content, structured, meta = (
            value.get(key) for key in ("content", "structuredContent", "_meta")
        )
        return cls(
            content=[dict(block) for block in content if isinstance(block, dict)]
            if isinstance(content, list)
            else [],
            structured_content=structured if isinstance(structured, dict) else None,
            is_error=value.get("isError") is True,
            meta=meta if isinstance(meta, dict) else None,
        )

    @property
    def first_text(self) -> str:
        """The text of the first block when it is a text block, else ""."""
        first = self.content[0] if self.content else {}
        return str(first.get("text", "")) if first.get("type") == "text" else ""

    def wire(self) -> dict[str, Any]:
        """The CallToolResult as JSON: the workflow's result, what tasks/result returns."""
        result: dict[str, Any] = {
            "resultType": "complete",
            "content": [dict(block) for block in self.content],
            "isError": self.is_error,
        }
        if self.structured_content is not None:
            result["structuredContent"] = self.structured_content
        if self.meta is not None:
            result["_meta"] = self.meta
        return result
