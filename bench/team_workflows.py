"""The team's side of `make bench`'s question phase (bench/floor_question.py): the same one
question asked through the interactive contract (the helper, sdk/python) and in raw Temporal
(a memo the client polls, a signal it sends). A module of its own and light on imports: the
sandbox re-imports it for every run."""

from __future__ import annotations

from typing import Any

from mcp_tasks_workflow import approve, tool_result
from temporalio import workflow

RAW_ANSWER_SIGNAL = "answer"


@workflow.defn(name="BenchTeamQuestion")
class TeamQuestion:
    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        answer = await approve("Go on?")
        return tool_result("answered", {"approved": answer.approved})


@workflow.defn(name="BenchRawQuestion")
class RawQuestion:
    def __init__(self) -> None:
        self.answer: dict[str, Any] | None = None

    @workflow.run
    async def run(self) -> dict[str, Any]:
        workflow.upsert_memo({"asking": True})
        await workflow.wait_condition(lambda: self.answer is not None)
        return dict(self.answer or {})

    @workflow.signal(name=RAW_ANSWER_SIGNAL)
    def answered(self, answer: dict[str, Any]) -> None:
        self.answer = answer
