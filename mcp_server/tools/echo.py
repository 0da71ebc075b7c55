"""`echo`: a synchronous tool, answered at once (no workflow, no task)."""

from __future__ import annotations

from mcp_server.tools.registry import Tool, ToolCall, ToolRegistry
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.results import text_result


async def _echo(call: ToolCall) -> ToolResult:
    text = str(call.arguments.get("text", ""))
    return text_result(text, structured={"text": text, "length": len(text)})


def register(registry: ToolRegistry) -> None:
    registry.add(
        Tool(
            "echo",
            "Returns its text at once (a synchronous tool).",
            {"type": "object", "properties": {"text": {"type": "string", "maxLength": 100000}}},
            output_schema={
                "type": "object",
                "properties": {"text": {"type": "string"}, "length": {"type": "integer"}},
                "required": ["text", "length"],
            },
            annotations={"readOnlyHint": True},
            handler=_echo,
        )
    )
