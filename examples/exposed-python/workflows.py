"""The team's workflow: plain Temporal code, on the team's worker and task queue, that speaks
the interactive contract through the `mcp_tasks_workflow` helper."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import copy_rows, drop_copy, switch_traffic

from mcp_tasks_workflow import ToolError, approve, report, tool_result

STEP = {"start_to_close_timeout": timedelta(seconds=30)}


@workflow.defn
class MigrateDatabase:
    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        database = str(args["database"])
        await report(f"step 1 of 3: copying {database}", progress=1, total=3)
        rows = await workflow.execute_activity(copy_rows, database, **STEP)
        try:
            await report(
                f"step 2 of 3: {rows} rows copied, waiting for approval", progress=2, total=3
            )
            answer = await approve(f"Switch traffic for {database} to the new cluster?")
        except asyncio.CancelledError:
            # Cancelled while it waited: the copy is dropped before the workflow ends.
            await workflow.execute_activity(drop_copy, database, **STEP)
            raise
        if not answer.approved:
            await workflow.execute_activity(drop_copy, database, **STEP)
            raise ToolError(
                f"Not switched: switching {database} to the new cluster was declined "
                f"({answer.action}); the copy was dropped",
                {"database": database, "switched": False},
            )
        await report(f"step 3 of 3: switching {database}", progress=3, total=3)
        cluster = await workflow.execute_activity(switch_traffic, database, **STEP)
        return tool_result(
            f"Switched {database} to {cluster} ({rows} rows), approved by "
            f"{answer.answered_by or 'the caller'}",
            {"database": database, "rows": rows, "cluster": cluster, "switched": True},
        )
