"""The fixture tools the official conformance suite calls (shared/spec/conformance.md): those of
the tasks scenarios, the diagnostic tools of `server-stateless` and
`http-custom-header-server-validation`, and (conformance_mrtr.py) those of
`input-required-result-*`.

The first tool listed accepts `{}` and runs synchronously: the header-validation scenario calls
`tools[0]` with empty arguments and expects a result.
"""

from __future__ import annotations

from typing import Any

from mcp_server.tools import conformance_mrtr
from mcp_server.tools.registry import SyncHandler, Tool, ToolCall, ToolRegistry
from workflows import conformance
from workflows.results import text_result
from workflows.task_workflow import elicitation

_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
_ELICIT: dict[str, Any] = {"elicitation": {}}


async def _logging_tool(call: ToolCall) -> dict[str, Any]:
    # Log notifications go out only when a request sets _meta logLevel; this server sends none.
    return text_result("test_logging_tool ran; no log notifications were requested")


async def _greet(call: ToolCall) -> dict[str, Any]:
    return text_result(f"Hello, {call.arguments['name']}!")


async def _missing_capability(call: ToolCall) -> dict[str, Any]:
    answer = call.input_responses["sample"]
    content = answer.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return text_result(f"The client sampled: {text or answer}")


async def _streaming_elicitation(call: ToolCall) -> dict[str, Any]:
    answer = call.input_responses["favorite"]
    return text_result(f"Elicitation answered: {answer.get('action')} {answer.get('content')}")


async def _dynamic(call: ToolCall) -> dict[str, Any]:
    return text_result("test_dynamic_tool is here until the next test_trigger_tool_change")


def _trigger_tool_change(registry: ToolRegistry) -> SyncHandler:
    async def toggle(call: ToolCall) -> dict[str, Any]:
        if registry.get("test_dynamic_tool") is None:
            registry.add(Tool("test_dynamic_tool", "Comes and goes.", _EMPTY, handler=_dynamic))
            return text_result("added test_dynamic_tool; listeners get tools/list_changed")
        registry.remove("test_dynamic_tool")
        return text_result("removed test_dynamic_tool; listeners get tools/list_changed")

    return toggle


async def _header_param(call: ToolCall) -> dict[str, Any]:
    return text_result(f"Region {call.arguments['region']} echoed from Mcp-Param-Region")


def _sampling_prelude(arguments: dict[str, Any]) -> dict[str, dict[str, Any]]:
    message = {"role": "user", "content": {"type": "text", "text": "Say hello"}}
    return {
        "sample": {
            "method": "sampling/createMessage",
            "params": {"messages": [message], "maxTokens": 50},
        }
    }


def _favorite_prelude(arguments: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"favorite": elicitation("Pick a colour", {"colour": {"type": "string"}}, ["colour"])}


def _name_prelude(arguments: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"name": elicitation("What is your name?", {"name": {"type": "string"}}, ["name"])}


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(conformance.WORKFLOWS)
    registry.add(
        Tool(
            "test_logging_tool",
            "Runs and sends no log notifications.",
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
            prelude=_name_prelude,
        )
    )
    registry.add(
        Tool(
            "test_missing_capability",
            "Needs the client's sampling capability.",
            _EMPTY,
            handler=_missing_capability,
            prelude=_sampling_prelude,
        )
    )
    registry.add(
        Tool(
            "test_streaming_elicitation",
            "Asks for input by MRTR (never a server request).",
            _EMPTY,
            handler=_streaming_elicitation,
            prelude=_favorite_prelude,
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
    conformance_mrtr.register(registry)
