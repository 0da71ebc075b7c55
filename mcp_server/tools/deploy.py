"""`deploy`: a pipeline of shell steps with approval gates and rollback (workflows/deploy.py,
activities/deploy.py)."""

from __future__ import annotations

from activities.deploy import PIPELINE_NAME, PipelineFiles, run_command
from mcp_server.tools.registry import Tool, ToolRegistry
from workflows import deploy

DAY_MS = 24 * 60 * 60 * 1000


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(deploy.WORKFLOWS)
    pipelines = PipelineFiles(registry.settings.pipelines_dir)
    registry.needs_directory("pipelines_dir", registry.settings.pipelines_dir, "deploy")
    registry.add_activities([run_command, pipelines.load_pipeline])
    registry.add(
        Tool(
            "deploy",
            "Runs a deploy pipeline (pipelines/NAME.toml on the server): its steps in order as "
            "shell commands, asking for approval where the pipeline says so, rolling back the "
            "completed steps in reverse if a step fails, an approval is declined, or the task "
            "is cancelled. Can be paused before its next step.",
            {
                "type": "object",
                "properties": {
                    "pipeline": {"type": "string", "pattern": PIPELINE_NAME.pattern},
                },
                "required": ["pipeline"],
            },
            output_schema={
                "type": "object",
                "properties": {"steps": {"type": "array", "items": {"type": "object"}}},
                "required": ["steps"],
            },
            annotations={"destructiveHint": True},
            task_support="optional",
            workflow="Deploy",
            scopes=frozenset({"deploy"}),
            ttl_ms=7 * DAY_MS,
            poll_interval_ms=2000,
            # The pipeline's own description, when the server can read the pipelines too (the
            # worker is the one that must: docs/operations/existing-cluster.md).
            describe=pipelines.describe,
            pausable=True,
        )
    )
