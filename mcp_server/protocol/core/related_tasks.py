"""Related tasks: `_meta["io.modelcontextprotocol/relatedTaskIds"]` (the ext-tasks draft schema's
`RelatedTaskIds`, schema/draft/schema.ts at b30c477), advisory: a server MAY ignore it and need
not say whether it used it.

Rules implemented:
- Any request may carry it. Its shape is checked on every 2026-07-28 request and on a
  2025-11-25 `tools/call` (models.py `related_task_ids`): an array of at most 20 non-empty
  strings, else -32602 naming the key. Only a `tools/call` that starts a task uses it (as a
  task, or attached); every other request ignores it.
- Before an id is used it is looked up exactly as `tasks/get` looks a task up
  (tasks/access.py `find_task`): the caller's own task, or one naming it as an approver, within
  its TTL. A miss spends the caller's "not found" budget (RATE_LIMITED, -31000, when it is
  empty, as tasks/get would answer) and takes the common "not found" deadline; the lookups run
  together, so a call naming unknown ids waits that deadline once.
- Ids that are not found (unknown, expired, someone else's) are dropped silently, never
  refused: the draft lets a server ignore the hint, no view a client reads shows the ids kept
  (the draft puts them on no Task), and the call's answer and timing are the same whichever
  ids were kept, so it tells nothing about a task the caller may not read.
- The ids kept are recorded in the new task's memo (`TaskState.related_task_ids`, written only
  when there are some) and shown to operators by `mcp-tasks tasks show` (and `--json`).
"""

from __future__ import annotations

import asyncio

from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.tasks.access import find_task


async def readable(ctx: RequestContext, services: Services, task_ids: list[str]) -> list[str]:
    """The ids of `task_ids` the caller may read, in their order; the others are dropped."""
    misses, principal = services.limits.rates.misses, ctx.principal
    taken = 0
    try:
        for _ in task_ids:  # every token before any lookup, as find_task takes its one
            misses.take(principal)
            taken += 1
        found = await asyncio.gather(
            *(
                find_task(services.store, task_id, principal, services.clock, None, ctx.identity)
                for task_id in task_ids
            ),
            return_exceptions=True,  # each lookup ends before the first failure is raised
        )
        failures = [answer for answer in found if isinstance(answer, BaseException)]
        if failures:
            raise failures[0]
    except BaseException:
        for _ in range(taken):  # refused, or the store failed: no answer either way
            misses.give_back(principal)
        raise
    kept = [task_id for task_id, answer in zip(task_ids, found, strict=True) if answer]
    for _ in kept:  # only "not found" answers spend the bucket
        misses.give_back(principal)
    return kept
