"""`multi_step_job`: heartbeating steps, with an optional approval first
(workflows/multi_step_job.py, activities/multi_step_job.py)."""

from __future__ import annotations

from activities.multi_step_job import ACTIVITIES
from mcp_server.tools.registry import Tool, ToolRegistry
from workflows import multi_step_job

DAY_MS = 24 * 60 * 60 * 1000


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(multi_step_job.WORKFLOWS)
    registry.add_activities(ACTIVITIES)
    registry.add(
        Tool(
            "multi_step_job",
            "Runs `steps` steps of `step_seconds` each as durable, heartbeating Temporal "
            "activities; with `require_approval`, first waits (up to days) for a human to "
            "approve. Runs as a task. Steerable and pausable between steps.",
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
            task_support="optional",
            workflow="MultiStepJob",
            ttl_ms=7 * DAY_MS,
            poll_interval_ms=2000,
            steering=True,
            pausable=True,
        )
    )
