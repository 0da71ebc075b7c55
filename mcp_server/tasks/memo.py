"""The task state of a LISTED workflow, read from its memo (TaskState.from_memo).

In a listing, a sweep or a count, a memo this process cannot decode (written through the
payload codec of a key it lacks, MCP_TASKS_PAYLOAD_KEY) is skipped and logged: one such task in
a namespace shared with other servers must not fail the whole listing. A read of one task keeps
raising the codec's error instead (PayloadKeyError: a clear -32603 naming the setting), and so
does the operator CLI's listing (tasks/listing.py), whose user must hear that its key is missing.
"""

from __future__ import annotations

import logging
from typing import Protocol

from mcp_tasks.contracts.task_state import MEMO_KEY, TaskState

log = logging.getLogger("mcp_server.tasks.memo")


class HasMemo(Protocol):
    id: str

    async def memo_value(self, key: str, default: object) -> object: ...


async def task_state_of(holder: HasMemo) -> TaskState | None:
    try:
        return TaskState.from_memo(await holder.memo_value(MEMO_KEY, None))
    except Exception as err:  # the codec's or the converter's refusal, whatever its type
        log.warning(
            "workflow %s: its memo cannot be decoded here (%s: %s); is MCP_TASKS_PAYLOAD_KEY "
            "the key it was written with?",
            holder.id,
            type(err).__name__,
            err,
        )
        return None
