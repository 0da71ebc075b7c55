"""`import_records`: a batch import with real progress, safe to kill and to cancel.

Each chunk is one activity (an idempotent upsert in one transaction), so a worker killed
mid-import re-runs at most the chunk it was in: no row is duplicated or lost. statusMessage
carries only counts that were committed. A cancellation lets the chunk in flight finish (it is
short) and ends the task saying how many rows were committed.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.results import text_result
from workflows.task_state import TaskInput
from workflows.task_workflow import TaskWorkflow, task_workflow

with workflow.unsafe.imports_passed_through():
    from activities.records import ImportSpec, RecordImports

CHUNK_TIMEOUT = timedelta(minutes=5)
RETRIES = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(seconds=1))


@task_workflow("ImportRecords")
class ImportRecordsWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> dict[str, Any]:
        args = task.arguments
        source = str(args["source"])
        spec = ImportSpec(
            source=source,
            database=str(args["database"]),
            table=str(args["table"]),
            key=str(args["key"]),
            format=str(
                args.get("format") or ("csv" if source.lower().endswith(".csv") else "jsonl")
            ),
            chunk_size=int(args.get("chunk_size", 1000)),
            owner=task.owner,
        )
        delay = timedelta(milliseconds=int(args.get("chunk_delay_ms", 0)))
        try:
            plan = await workflow.execute_activity_method(
                RecordImports.inspect_source,
                spec,
                start_to_close_timeout=CHUNK_TIMEOUT,
                retry_policy=RETRIES,
            )
        except ActivityError as err:
            cause = err.cause
            message = cause.message if isinstance(cause, ApplicationError) else str(err)
            return text_result(f"Cannot import {source!r}: {message}", is_error=True)
        total, imported, bad_count = plan["totalRows"], 0, 0
        bad: list[dict[str, Any]] = []
        self.report(_progress(0, total))
        self.cancel_message = _cancelled(0, total)
        for index, offset in enumerate(plan["chunkOffsets"]):
            chunk = workflow.start_activity_method(
                RecordImports.import_chunk,
                args=[spec, plan["columns"], offset, index * spec.chunk_size + 1],
                start_to_close_timeout=CHUNK_TIMEOUT,
                retry_policy=RETRIES,
            )
            try:
                # Shielded: a cancellation waits for the chunk in flight, whose rows commit.
                done = await asyncio.shield(chunk)
            except asyncio.CancelledError:
                done = await chunk
                self.cancel_message = _cancelled(imported + done["imported"], total)
                raise
            imported += done["imported"]
            self.cancel_message = _cancelled(imported, total)
            bad_count += done["badCount"]
            bad.extend(done["bad"][: 5 - len(bad)])
            self.report(_progress(imported + bad_count, total))
            if delay:
                await workflow.sleep(delay)
        summary = f"Imported {imported:,} of {total:,} rows into {spec.table}"
        if bad_count:
            summary += f"; {bad_count:,} bad rows skipped"
        return text_result(
            summary,
            structured={
                "imported": imported,
                "totalRows": total,
                "badRows": bad_count,
                "firstBadRows": bad,
                "table": spec.table,
                "database": spec.database,
            },
        )


def _cancelled(imported: int, total: int) -> str:
    return f"Cancelled: {imported:,} of {total:,} rows were committed"


def _progress(done: int, total: int) -> str:
    percent = 100 if total == 0 else done * 100 // total
    return f"{done:,} / {total:,} rows ({percent}%)"


WORKFLOWS = [ImportRecordsWorkflow]
