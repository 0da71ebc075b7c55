"""`import_records`: a file of the import directory into a SQLite table of the caller, chunk by
chunk (workflows/import_records.py, activities/import_records.py)."""

from __future__ import annotations

from activities.import_records import IDENTIFIER, RecordImports
from mcp_server.tools.registry import Tool, ToolRegistry
from workflows import import_records

DAY_MS = 24 * 60 * 60 * 1000


def register(registry: ToolRegistry) -> None:
    registry.add_workflows(import_records.WORKFLOWS)
    records = RecordImports(registry.settings.import_dir)
    registry.needs_directory("import_dir", registry.settings.import_dir, "import_records")
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
