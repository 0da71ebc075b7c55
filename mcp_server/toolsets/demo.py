"""The default toolset: a synchronous tool and a multi-step job with an optional approval."""

from __future__ import annotations

from typing import Any

from activities.steps import ACTIVITIES
from mcp_server.tool_registry import Tool, ToolCall, ToolRegistry
from workflows import demo
from workflows.results import text_result

DAY_MS = 24 * 60 * 60 * 1000


async def _echo(call: ToolCall) -> dict[str, Any]:
    text = str(call.arguments.get("text", ""))
    return text_result(text, structured={"text": text, "length": len(text)})


def _job_capabilities(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"elicitation": {}} if arguments.get("require_approval") else {}


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(demo.WORKFLOWS)
    registry.add_activities(ACTIVITIES)
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
    registry.add(
        Tool(
            "multi_step_job",
            "Runs `steps` steps of `step_seconds` each as durable, heartbeating Temporal "
            "activities; with `require_approval`, first waits (up to days) for a human to "
            "approve. Runs as a task.",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 200},
                    "steps": {"type": "integer", "minimum": 1, "maximum": 100},
                    "step_seconds": {"type": "number", "minimum": 0, "maximum": 3600},
                    "require_approval": {"type": "boolean"},
                },
            },
            output_schema={
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "approved": {"type": "boolean"},
                    "steps": {"type": "array"},
                },
                "required": ["name", "approved", "steps"],
            },
            task_support="required",
            workflow="MultiStepJob",
            ttl_ms=7 * DAY_MS,
            poll_interval_ms=2000,
            required_capabilities=_job_capabilities,
        )
    )
