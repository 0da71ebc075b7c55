"""The fixture tools the official conformance suite calls (shared/spec/conformance.md): those of
the tasks scenarios, the diagnostic tools of `server-stateless` and
`http-custom-header-server-validation`, the content and progress fixtures of `tools-call-*`, the
schema of `json-schema-2020-12`, the logging fixture of `tools-call-with-logging`, the task tools
that ask the client something mid-call (`tools-call-sampling`, `tools-call-elicitation`,
`elicitation-sep1034-defaults`, `elicitation-sep1330-enums`), and (conformance_mrtr.py) those of
`input-required-result-*`.

The first tool listed accepts `{}` and runs synchronously: the header-validation scenario calls
`tools[0]` with empty arguments and expects a result.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_server.tools import conformance_mrtr
from mcp_server.tools.registry import SyncHandler, Tool, ToolCall, ToolRegistry
from mcp_tasks.contracts.tool_messages import InputRequest, ToolResult
from workflows import conformance
from workflows.results import text_result
from workflows.task_workflow import elicitation

_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
_ELICIT: dict[str, Any] = {"elicitation": {}}
_SAMPLE: dict[str, Any] = {"sampling": {}}


async def _logging_tool(call: ToolCall) -> ToolResult:
    # At 2026-07-28 this reaches the client only when the request's _meta names a logLevel.
    await call.log("info", "test_logging_tool ran")
    return text_result("test_logging_tool ran")


async def _tool_with_logging(call: ToolCall) -> ToolResult:
    # Three info messages about 50 ms apart, as tools-call-with-logging expects.
    for step, text in enumerate(
        ("Tool execution started", "Tool processing data", "Tool execution completed")
    ):
        if step:
            await asyncio.sleep(0.05)
        await call.log("info", text)
    return text_result("test_tool_with_logging sent three log messages")


async def _greet(call: ToolCall) -> ToolResult:
    return text_result(f"Hello, {call.arguments['name']}!")


async def _missing_capability(call: ToolCall) -> ToolResult:
    answer = call.input_responses["sample"]
    content = answer.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return text_result(f"The client sampled: {text or answer}")


async def _streaming_elicitation(call: ToolCall) -> ToolResult:
    answer = call.input_responses["favorite"]
    return text_result(f"Elicitation answered: {answer.get('action')} {answer.get('content')}")


async def _dynamic(call: ToolCall) -> ToolResult:
    return text_result("test_dynamic_tool is here until the next test_trigger_tool_change")


def _trigger_tool_change(registry: ToolRegistry) -> SyncHandler:
    async def toggle(call: ToolCall) -> ToolResult:
        if registry.get("test_dynamic_tool") is None:
            registry.add(Tool("test_dynamic_tool", "Comes and goes.", _EMPTY, handler=_dynamic))
            return text_result("added test_dynamic_tool; listeners get tools/list_changed")
        registry.remove("test_dynamic_tool")
        return text_result("removed test_dynamic_tool; listeners get tools/list_changed")

    return toggle


async def _header_param(call: ToolCall) -> ToolResult:
    return text_result(f"Region {call.arguments['region']} echoed from Mcp-Param-Region")


# A 1x1 red PNG and eight samples of 8-bit mono silence as a WAV file.
_RED_PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
_SILENT_WAV = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="
_IMAGE = {"type": "image", "data": _RED_PIXEL_PNG, "mimeType": "image/png"}


def _fixed(*content: dict[str, Any], is_error: bool = False) -> SyncHandler:
    """A handler that always returns `content`."""

    async def handler(call: ToolCall) -> ToolResult:
        return ToolResult(list(content), is_error=is_error)

    return handler


def _embedded(uri: str, mime_type: str, text: str) -> dict[str, Any]:
    return {"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "text": text}}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


_CONTENT_FIXTURES = {
    "test_simple_text": _fixed(_text("This is a simple text response for testing.")),
    "test_image_content": _fixed(_IMAGE),
    "test_audio_content": _fixed({"type": "audio", "data": _SILENT_WAV, "mimeType": "audio/wav"}),
    "test_embedded_resource": _fixed(
        _embedded("test://embedded-resource", "text/plain", "This is an embedded resource content.")
    ),
    "test_multiple_content_types": _fixed(
        _text("Multiple content types test:"),
        _IMAGE,
        _embedded(
            "test://mixed-content-resource", "application/json", '{"test":"data","value":123}'
        ),
    ),
    "test_error_handling": _fixed(
        _text("This tool intentionally returns an error for testing"), is_error=True
    ),
}

# Keywords of JSON Schema 2020-12 that tools/list must pass through untouched: $schema, $defs,
# $anchor, $ref, allOf/anyOf, if/then/else, additionalProperties.
_JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


async def _tool_with_progress(call: ToolCall) -> ToolResult:
    # 0, 50 and 100 of 100, about 50 ms apart, as tools-call-with-progress expects.
    for step, progress in enumerate((0.0, 50.0, 100.0)):
        if step:
            await asyncio.sleep(0.05)
        await call.report_progress(progress, 100.0, f"{progress:g}% done")
    return text_result("test_tool_with_progress finished after reporting 0, 50 and 100 of 100")


async def _json_schema_tool(call: ToolCall) -> ToolResult:
    contact = call.arguments.get("phone") or call.arguments.get("email")
    return text_result(f"Valid contact for {call.arguments.get('name', 'someone')}: {contact}")


def _sampling_mrtr(arguments: dict[str, Any]) -> dict[str, InputRequest]:
    message = {"role": "user", "content": {"type": "text", "text": "Say hello"}}
    return {
        "sample": {
            "method": "sampling/createMessage",
            "params": {"messages": [message], "maxTokens": 50},
        }
    }


def _favorite_mrtr(arguments: dict[str, Any]) -> dict[str, InputRequest]:
    return {"favorite": elicitation("Pick a colour", {"colour": {"type": "string"}}, ["colour"])}


def _name_mrtr(arguments: dict[str, Any]) -> dict[str, InputRequest]:
    return {"name": elicitation("What is your name?", {"name": {"type": "string"}}, ["name"])}


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(conformance.WORKFLOWS)
    registry.add(
        Tool(
            "test_logging_tool",
            "Logs one info message (when the request asks for log messages).",
            _EMPTY,
            handler=_logging_tool,
        )
    )
    registry.add(
        Tool(
            "greet",
            "Greets someone synchronously.",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            handler=_greet,
        )
    )
    registry.add(
        Tool(
            "slow_compute",
            "Sleeps `seconds`, as a task when the client declares the tasks extension.",
            {
                "type": "object",
                "properties": {
                    "seconds": {"type": "number", "minimum": 0, "maximum": 3600},
                    "label": {"type": "string"},
                },
                "required": ["seconds"],
            },
            task_support="optional",
            workflow="SlowCompute",
            poll_interval_ms=500,
        )
    )
    registry.add(
        Tool(
            "failing_job",
            "A task that ends with a tool error (isError).",
            _EMPTY,
            task_support="required",
            workflow="FailingJob",
            poll_interval_ms=500,
        )
    )
    registry.add(
        Tool(
            "protocol_error_job",
            "A task that ends failed with a JSON-RPC error.",
            _EMPTY,
            task_support="required",
            workflow="ProtocolErrorJob",
            poll_interval_ms=500,
        )
    )
    registry.add(
        Tool(
            "confirm_delete",
            "Asks for confirmation (input_required), then reports the deletion.",
            {
                "type": "object",
                "properties": {"filename": {"type": "string"}},
                "required": ["filename"],
            },
            task_support="required",
            workflow="ConfirmDelete",
            poll_interval_ms=500,
            required_capabilities=_ELICIT,
        )
    )
    registry.add(
        Tool(
            "multi_input",
            "Asks two questions at once.",
            _EMPTY,
            task_support="required",
            workflow="MultiInput",
            poll_interval_ms=500,
            required_capabilities=_ELICIT,
        )
    )
    registry.add(
        Tool(
            "test_tool_with_task",
            "Asks for a name by MRTR, then greets as a task.",
            _EMPTY,
            task_support="required",
            workflow="TestToolWithTask",
            poll_interval_ms=500,
            mrtr=_name_mrtr,
        )
    )
    registry.add(
        Tool(
            "test_missing_capability",
            "Needs the client's sampling capability.",
            _EMPTY,
            handler=_missing_capability,
            mrtr=_sampling_mrtr,
        )
    )
    registry.add(
        Tool(
            "test_streaming_elicitation",
            "Asks for input by MRTR (never a server request).",
            _EMPTY,
            handler=_streaming_elicitation,
            mrtr=_favorite_mrtr,
        )
    )
    registry.add(
        Tool(
            "test_trigger_tool_change",
            "Adds or removes test_dynamic_tool, so listeners see tools/list_changed.",
            _EMPTY,
            handler=_trigger_tool_change(registry),
        )
    )
    registry.add(
        Tool(
            "test_header_param",
            "Echoes a region mirrored into the Mcp-Param-Region header.",
            {
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                "required": ["region"],
            },
            handler=_header_param,
        )
    )
    for name, handler in _CONTENT_FIXTURES.items():
        registry.add(
            Tool(name, f"Conformance fixture of tools-call ({name}).", _EMPTY, handler=handler)
        )
    registry.add(
        Tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100 (when the request has a progressToken).",
            _EMPTY,
            handler=_tool_with_progress,
        )
    )
    registry.add(
        Tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            _JSON_SCHEMA_2020_12,
            handler=_json_schema_tool,
        )
    )
    registry.add(
        Tool(
            "test_tool_with_logging",
            "Logs three info messages about 50 ms apart.",
            _EMPTY,
            handler=_tool_with_logging,
        )
    )
    _register_asking_tools(registry)
    conformance_mrtr.register(registry)


def _asking(
    name: str, description: str, schema: dict[str, Any], workflow: str, needs: dict[str, Any]
) -> Tool:
    """A task tool that asks the client mid-call (so it needs the capability to answer); called
    without `task`, it runs attached to the call and its question goes out on the stream."""
    return Tool(
        name,
        description,
        schema,
        task_support="optional",
        workflow=workflow,
        poll_interval_ms=500,
        required_capabilities=needs,
    )


def _one_string(name: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}


def _register_asking_tools(registry: ToolRegistry) -> None:
    registry.add(
        _asking(
            "test_sampling",
            "Asks the client's LLM to answer `prompt` (sampling/createMessage).",
            _one_string("prompt"),
            "TestSampling",
            _SAMPLE,
        )
    )
    registry.add(
        _asking(
            "test_elicitation",
            "Asks the user for a username and an email (elicitation/create).",
            _one_string("message"),
            "TestElicitation",
            _ELICIT,
        )
    )
    registry.add(
        _asking(
            "test_elicitation_sep1034_defaults",
            "Asks for a form whose fields all have defaults (SEP-1034).",
            _EMPTY,
            "TestElicitationDefaults",
            _ELICIT,
        )
    )
    registry.add(
        _asking(
            "test_elicitation_sep1330_enums",
            "Asks for a form with every enum form (SEP-1330).",
            _EMPTY,
            "TestElicitationEnums",
            _ELICIT,
        )
    )
