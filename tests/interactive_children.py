"""Team workflows that speak the interactive contract through the helper (sdk/python), run as
the children of ExposedWorkflow in tests/workflows/test_child_questions.py. A module of its own and
light on imports: the sandbox re-imports it for every run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from mcp_tasks_workflow import (
    QuestionError,
    ToolError,
    approve,
    ask,
    elicitation,
    next_steer,
    report,
    safe_point,
    steer_messages,
    tool_result,
)
from temporalio import workflow

BOGUS = {"method": "bogus/ask", "params": {}}


@workflow.defn(name="TestsAskTwice")
class AskTwice:
    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        await report(progress=1, total=4)
        first = await approve("First?")
        await report("half way", progress=0.5, total=1)
        second = await approve("Second?")
        return {"first": first.approved, "second": second.approved, "by": second.answered_by}


@workflow.defn(name="TestsAskBadly")
class AskBadly:
    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        approvers = args.get("approvers")
        request = elicitation("Fine?", {"ok": {"type": "boolean"}}) if approvers else BOGUS
        try:
            await ask({"x": request}, approvers=approvers)
        except QuestionError as err:
            return tool_result(f"refused: {err}", {"timedOut": err.timed_out})
        return tool_result("asked")


@workflow.defn(name="TestsAskWithTimeout")
class AskWithTimeout:
    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            await approve("Anyone?", timeout=timedelta(seconds=1))
        except QuestionError as err:
            raise ToolError(f"gave up: {err}", {"timedOut": err.timed_out}) from None
        return tool_result("answered")


@workflow.defn(name="TestsSteered")
class Steered:
    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        received: list[str] = []
        while len(received) < 3:
            received.append((await next_steer()).message)
            await safe_point()
        received += [steer.message for steer in steer_messages()]
        return {"received": received}
