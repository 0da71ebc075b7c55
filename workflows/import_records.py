"""`import_records`: a batch import with real progress, safe to kill and to cancel.

Each chunk is one activity (an idempotent upsert in one transaction), so a worker killed
mid-import re-runs at most the chunk it was in: no row is duplicated or lost. The chunk
heartbeats while it works, so a killed worker is noticed within `HEARTBEAT_TIMEOUT`, not at the
end of `CHUNK_TIMEOUT`. statusMessage carries only counts that were committed. A cancellation
lets the chunk in flight finish (it is short) and ends the task saying how many rows were
committed.

- Everything that makes an import impossible (a missing file, a duplicate column, a reserved
  or differently keyed table, a quote that never closes) is found by `plan_import` before any
  row is written, and ends the task `completed` with an `isError` result naming it: refusals
  are non-retryable. A chunk that still fails (the file or database changed meanwhile) ends
  the task the same way, saying how many rows were committed.
- After `chunks_per_run` chunks (the tool's config, MCP_TASKS_IMPORT_CHUNKS_PER_RUN), or
  sooner when Temporal suggests it, the import continues as new with its progress (the next
  byte offset, row and line; the counts so far; the bad rows reported), so a large file in
  small chunks never meets Temporal's history limit. The taskId stays.
- Runs started before this version (no `PATCH` marker in their history) go on with the code
  they were recorded with (`_execute_v1`), so they replay (tests/histories/imports/).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

from mcp_tasks.contracts.imports import ChunkDone
from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, task_workflow

with workflow.unsafe.imports_passed_through():
    from activities.import_records import BAD_ROWS_REPORTED, ImportSpec, RecordImports

PATCH = "import-records-v2"
CHUNK_TIMEOUT = timedelta(minutes=5)
HEARTBEAT_TIMEOUT = timedelta(seconds=30)
RETRIES = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(seconds=1))
CHUNKS_PER_RUN = 200


@dataclass
class ImportProgress:
    """Where an import stands; what a run hands the next when it continues as new."""

    columns: list[str]
    total_rows: int
    offset: int  # the byte offset of the next row
    line: int  # the file line of the next row
    row: int = 1  # the number of the next row (1-based, header excluded)
    imported: int = 0
    bad_count: int = 0
    bad: list[dict[str, Any]] = field(default_factory=list)

    def advance(self, done: ChunkDone) -> None:
        self.offset, self.line = done["nextOffset"], done["nextLine"]
        self.row += done["rows"]
        self.imported += done["imported"]
        self.bad_count += done["badCount"]
        self.bad.extend(done["bad"][: BAD_ROWS_REPORTED - len(self.bad)])


@task_workflow("ImportRecords")
class ImportRecordsWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        spec = _spec(task)
        delay = timedelta(milliseconds=int(task.arguments.get("chunk_delay_ms", 0)))
        if not workflow.patched(PATCH):
            return await self._execute_v1(spec, delay)
        progress = self.resumed(ImportProgress)
        if progress is None:
            try:
                plan = await workflow.execute_activity_method(
                    RecordImports.plan_import, spec, **_chunk_options()
                )
            except ActivityError as err:
                return text_result(f"Cannot import {spec.source!r}: {_reason(err)}", is_error=True)
            progress = ImportProgress(
                plan["columns"], plan["totalRows"], plan["offset"], plan["line"]
            )
            self.report(_progress(0, progress.total_rows))
            self.cancel_message = _cancelled(0, progress.total_rows)
        per_run = max(1, int(task.tool_config.get("chunks_per_run", CHUNKS_PER_RUN)))
        return await self._import(spec, progress, delay, per_run)

    async def _import(
        self, spec: ImportSpec, p: ImportProgress, delay: timedelta, per_run: int
    ) -> ToolResult:
        chunks = 0
        while p.row <= p.total_rows:
            if chunks and (chunks >= per_run or workflow.info().is_continue_as_new_suggested()):
                self.continue_as_new(p)
            rows = min(spec.chunk_size, p.total_rows - p.row + 1)
            chunk = workflow.start_activity_method(
                RecordImports.import_chunk,
                args=[replace(spec, chunk_size=rows), p.columns, p.offset, p.row, p.line],
                **_chunk_options(),
            )
            try:
                # Shielded: a cancellation waits for the chunk in flight, whose rows commit.
                done = await asyncio.shield(chunk)
            except asyncio.CancelledError:
                done = await chunk
                self.cancel_message = _cancelled(p.imported + done["imported"], p.total_rows)
                raise
            except ActivityError as err:
                if is_cancelled_exception(err):
                    raise
                return _stopped(spec, p, _reason(err))
            chunks += 1
            if not done["rows"]:
                break  # the file is shorter than when it was planned
            p.advance(done)
            self.cancel_message = _cancelled(p.imported, p.total_rows)
            self.report(_progress(p.imported + p.bad_count, p.total_rows))
            if delay and p.row <= p.total_rows:
                await workflow.sleep(delay)
        summary = f"Imported {p.imported:,} of {p.total_rows:,} rows into {spec.table}"
        if p.bad_count:
            summary += f"; {p.bad_count:,} bad rows skipped"
        if p.row <= p.total_rows:
            summary += f"; the source ended after row {p.row - 1:,}, shorter than when planned"
        return text_result(summary, structured=_totals(spec, p))

    async def _execute_v1(self, spec: ImportSpec, delay: timedelta) -> ToolResult:
        """The import as runs started before `PATCH` were recorded: the same commands."""
        try:
            plan = await workflow.execute_activity_method(
                RecordImports.inspect_source,
                spec,
                start_to_close_timeout=CHUNK_TIMEOUT,
                retry_policy=RETRIES,
            )
        except ActivityError as err:
            return text_result(f"Cannot import {spec.source!r}: {_reason(err)}", is_error=True)
        p = ImportProgress(plan["columns"], plan["totalRows"], 0, 0)
        self.report(_progress(0, p.total_rows))
        self.cancel_message = _cancelled(0, p.total_rows)
        for index, offset in enumerate(plan["chunkOffsets"]):
            chunk = workflow.start_activity_method(
                RecordImports.import_chunk,
                args=[spec, p.columns, offset, index * spec.chunk_size + 1],
                start_to_close_timeout=CHUNK_TIMEOUT,
                retry_policy=RETRIES,
            )
            try:
                done = await asyncio.shield(chunk)
            except asyncio.CancelledError:
                done = await chunk
                self.cancel_message = _cancelled(p.imported + done["imported"], p.total_rows)
                raise
            p.imported += done["imported"]
            self.cancel_message = _cancelled(p.imported, p.total_rows)
            p.bad_count += done["badCount"]
            p.bad.extend(done["bad"][: BAD_ROWS_REPORTED - len(p.bad)])
            self.report(_progress(p.imported + p.bad_count, p.total_rows))
            if delay:
                await workflow.sleep(delay)
        summary = f"Imported {p.imported:,} of {p.total_rows:,} rows into {spec.table}"
        if p.bad_count:
            summary += f"; {p.bad_count:,} bad rows skipped"
        return text_result(summary, structured=_totals(spec, p))


def _spec(task: TaskInput) -> ImportSpec:
    args = task.arguments
    source = str(args["source"])
    return ImportSpec(
        source=source,
        database=str(args["database"]),
        table=str(args["table"]),
        key=str(args["key"]),
        format=str(args.get("format") or ("csv" if source.lower().endswith(".csv") else "jsonl")),
        chunk_size=int(args.get("chunk_size", 1000)),
        owner=task.owner,
    )


def _chunk_options() -> dict[str, Any]:
    return {
        "start_to_close_timeout": CHUNK_TIMEOUT,
        "heartbeat_timeout": HEARTBEAT_TIMEOUT,
        "retry_policy": RETRIES,
    }


def _reason(err: ActivityError) -> str:
    cause = err.cause
    return cause.message if isinstance(cause, ApplicationError) else str(cause or err)


def _totals(spec: ImportSpec, p: ImportProgress) -> dict[str, Any]:
    return {
        "imported": p.imported,
        "totalRows": p.total_rows,
        "badRows": p.bad_count,
        "firstBadRows": p.bad,
        "table": spec.table,
        "database": spec.database,
    }


def _stopped(spec: ImportSpec, p: ImportProgress, reason: str) -> ToolResult:
    text = (
        f"The import of {spec.source!r} stopped at row {p.row:,}: {reason}. "
        f"{p.imported:,} of {p.total_rows:,} rows were committed"
    )
    return text_result(text, structured={**_totals(spec, p), "error": reason}, is_error=True)


def _cancelled(imported: int, total: int) -> str:
    return f"Cancelled: {imported:,} of {total:,} rows were committed"


def _progress(done: int, total: int) -> str:
    percent = 100 if total == 0 else done * 100 // total
    return f"{done:,} / {total:,} rows ({percent}%)"


WORKFLOWS = [ImportRecordsWorkflow]
