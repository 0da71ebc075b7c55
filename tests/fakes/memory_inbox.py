"""An in-memory `InboxStore` (mcp_server/tasks/inbox_store.py) over the in-memory task store
(memory_store.py), for the inbox's pages in process. The contract suite
(tests/contract/test_inbox_store_contract.py) runs the same tests on it and on the Temporal one:
- waiting_all: the tasks `waiting_of` lists for the principal (the same rule), oldest first;
  capped when at least `limit` of them wait;
- decisions: the first answer to each asked key, who gave it and when;
- arguments: the task's start arguments without its secret ones;
- a missing task's history is a refusal (`BackendRefused`), as Temporal's NOT_FOUND is.
"""

from __future__ import annotations

from typing import Any

from mcp_server.tasks.errors import BackendRefused
from mcp_server.tasks.task_history import Decision
from mcp_server.tasks.waiting import MAX_READ, Waiting, oldest_first, waiting_of
from tests.fakes.memory_store import MemoryTaskStore, _Task


class MemoryInboxStore:
    def __init__(self, store: MemoryTaskStore) -> None:
        self._store = store

    async def waiting_all(
        self,
        owner: str,
        approver_ids: frozenset[str] = frozenset(),
        every_approver: bool = False,
        limit: int = MAX_READ,
    ) -> tuple[list[Waiting], bool]:
        found = [
            waiting
            for entry in self._store.entries()
            if (waiting := waiting_of(entry.state, owner, approver_ids, every_approver))
        ]
        return oldest_first(found[:limit]), len(found) >= limit

    async def decisions(self, task_id: str, keys: set[str]) -> dict[str, Decision]:
        if not keys:
            return {}
        decided = self._entry(task_id).decided
        return {key: decision for key, decision in decided.items() if key in keys}

    async def arguments(self, task_id: str) -> dict[str, Any]:
        entry = self._entry(task_id)
        secret = set(entry.task.secret_arguments)
        return {k: v for k, v in entry.task.arguments.items() if k not in secret}

    def _entry(self, task_id: str) -> _Task:
        entry = self._store.entry(task_id)
        if entry is None:
            raise BackendRefused("memory", "read the task history", f"no task {task_id}")
        return entry
