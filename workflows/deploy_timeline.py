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

from typing import Any

TAIL_CHARS = 1000
MAX_TAILS = 10


def timeline(
    steps: list[dict[str, Any]],
    times: dict[str, dict[str, str]],
    waiting: str | None,
    finished: bool,
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for step in steps:
        status = str(step["status"])
        if status == "pending" and step["name"] == waiting:
            status = "waiting"
        elif status == "pending" and finished:
            status = "skipped"
        item: dict[str, Any] = {"name": step["name"], "status": status}
        item.update(times.get(step["name"], {}))
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
