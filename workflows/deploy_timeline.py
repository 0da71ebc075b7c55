"""A deploy's step timeline as the task state publishes it (TaskState.steps).

Pure, deterministic: built from what the workflow already knows (each step's outcome, the
times it noted with `workflow.now()`), so publishing it adds no Temporal command.

Rules implemented:
- One item per pipeline step, in order: name, status, and when known startedAt/endedAt,
  exitCode, outputTail, rollback (its outcome).
- A step waiting at its approval gate is `waiting`; once the deploy has ended, a step that
  never ran is `skipped`.
- Output tails stay small: the last `TAIL_CHARS` characters of each, and only the newest
  `MAX_TAILS` steps that have one keep it (the base redacts secret arguments from it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp_tasks.contracts.task_state import Step

TAIL_CHARS = 1000
MAX_TAILS = 10


def timeline(
    steps: Sequence[Mapping[str, Any]],
    times: Mapping[str, Mapping[str, str]],
    waiting: str | None,
    finished: bool,
) -> list[Step]:
    """The timeline of `steps`, the deploy's records of its pipeline's steps (a name, a
    status, and once run its command's outcome), with the `times` each started and ended."""
    items: list[Step] = []
    for step in steps:
        name = str(step["name"])
        status = str(step["status"])
        if status == "pending" and name == waiting:
            status = "waiting"
        elif status == "pending" and finished:
            status = "skipped"
        item: Step = {"name": name, "status": status}
        when = times.get(name, {})
        if "startedAt" in when:
            item["startedAt"] = when["startedAt"]
        if "endedAt" in when:
            item["endedAt"] = when["endedAt"]
        if "exitCode" in step:
            item["exitCode"] = step["exitCode"]
        tail = step.get("outputTail") or step.get("error")
        if tail:
            item["outputTail"] = str(tail)[-TAIL_CHARS:]
        if "rollback" in step:
            item["rollback"] = step["rollback"]
        items.append(item)
    with_tails = [item for item in items if "outputTail" in item]
    for item in with_tails[:-MAX_TAILS]:
        del item["outputTail"]
    return items
