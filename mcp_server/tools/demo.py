"""The default toolset: a synchronous tool and a multi-step job with an optional approval."""

from __future__ import annotations

from typing import Any

from activities.deploy import PIPELINE_NAME, PipelineFiles, run_command
from activities.import_records import IDENTIFIER, RecordImports
from activities.multi_step_job import ACTIVITIES
from mcp_server.tools.registry import Tool, ToolCall, ToolRegistry
from mcp_tasks.contracts.approvers import APPROVERS_SCHEMA
from workflows import deploy, import_records, multi_step_job, request_approval
from workflows.results import text_result

DAY_MS = 24 * 60 * 60 * 1000


async def _echo(call: ToolCall) -> dict[str, Any]:
    text = str(call.arguments.get("text", ""))
    return text_result(text, structured={"text": text, "length": len(text)})


def _job_capabilities(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"elicitation": {}} if arguments.get("require_approval") else {}


APPROVAL_TTL_MS = 30 * DAY_MS
MAX_DEADLINE_S = 29 * 24 * 3600  # the TTL outlives the longest deadline by a day


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(multi_step_job.WORKFLOWS)
    registry.add_workflows(request_approval.WORKFLOWS)
    registry.add_workflows(deploy.WORKFLOWS)
    registry.add_workflows(import_records.WORKFLOWS)
    records = RecordImports(registry.settings.import_dir)
    registry.add_activities([records.plan_import, records.inspect_source, records.import_chunk])
    registry.add(
        Tool(
            "import_records",
            "Imports a CSV or JSON Lines file of the server's import directory into a SQLite "
            "table of the caller's own databases, upserting on a key column, chunk by chunk, "
            "with progress.",
            {
                "type": "object",
                "properties": {
                    "source": {"type": "string", "minLength": 1},
                    "database": {"type": "string", "minLength": 1},
                    "table": {"type": "string", "pattern": IDENTIFIER.pattern},
                    "key": {"type": "string", "pattern": IDENTIFIER.pattern},
                    "format": {"enum": ["csv", "jsonl"]},
                    "chunk_size": {"type": "integer", "minimum": 10, "maximum": 100000},
                    "chunk_delay_ms": {"type": "integer", "minimum": 0, "maximum": 60000},
                },
                "required": ["source", "database", "table", "key"],
            },
            output_schema={
                "type": "object",
                "properties": {
                    "imported": {"type": "integer"},
                    "totalRows": {"type": "integer"},
                    "badRows": {"type": "integer"},
                    "firstBadRows": {"type": "array"},
                    "table": {"type": "string"},
                    "database": {"type": "string"},
                },
                "required": ["imported", "totalRows", "badRows", "firstBadRows"],
            },
            task_support="optional",
            workflow="ImportRecords",
            workflow_config={"chunks_per_run": registry.settings.import_chunks_per_run},
            ttl_ms=7 * DAY_MS,
            poll_interval_ms=1000,
        )
    )
    pipelines = PipelineFiles(registry.settings.pipelines_dir)
    registry.add_activities([run_command, pipelines.load_pipeline])
    registry.add(
        Tool(
            "deploy",
            "Runs a deploy pipeline (pipelines/NAME.toml on the server): its steps in order as "
            "shell commands, asking for approval where the pipeline says so, rolling back the "
            "completed steps in reverse if a step fails, an approval is declined, or the task "
            "is cancelled.",
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
        )
    )
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
            task_support="optional",
            workflow="MultiStepJob",
            ttl_ms=7 * DAY_MS,
            poll_interval_ms=2000,
            required_capabilities=_job_capabilities,
        )
    )
    default_approvers = list(registry.settings.approval_approvers)
    registry.add(
        Tool(
            "request_approval",
            "Asks a human to approve or reject, and waits (for days if need be). With "
            "`deadline_seconds`, resolves as `expired` when nobody has decided by then. With "
            "`approvers` (principals, or `scope:NAME` for anyone holding that scope), only "
            "they decide, with their own credentials; the caller cannot.",
            {
                "type": "object",
                "properties": {
                    "message": {"type": "string", "minLength": 1, "maxLength": 4000},
                    "require_reason": {"type": "boolean"},
                    "deadline_seconds": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_DEADLINE_S,
                    },
                    "approvers": APPROVERS_SCHEMA,
                },
                "required": ["message"],
            },
            output_schema={
                "type": "object",
                "properties": {
                    "decision": {"enum": ["approved", "rejected", "expired", "dismissed"]},
                    "reason": {"type": ["string", "null"]},
                    "decidedBy": {"type": ["string", "null"]},
                    "decidedByName": {"type": ["string", "null"]},
                    "waitedSeconds": {"type": "number"},
                },
                "required": ["decision", "reason", "decidedBy", "waitedSeconds"],
            },
            task_support="optional",
            workflow="RequestApproval",
            ttl_ms=APPROVAL_TTL_MS,
            poll_interval_ms=5000,
            # The caller's client shows the form, unless approvers decide (they answer
            # elsewhere: tasks/update with their own credentials, the inbox).
            required_capabilities=lambda arguments: (
                {} if arguments.get("approvers") or default_approvers else {"elicitation": {}}
            ),
            workflow_config={"approvers": default_approvers} if default_approvers else {},
        )
    )
