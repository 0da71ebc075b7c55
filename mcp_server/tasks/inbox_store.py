"""What the approval inbox reads of tasks beside the task store (store.py), behind one
interface, `InboxStore`, so that its pages run on any store:

- `waiting_all`: the tasks waiting for a principal's input, oldest first (waiting.py: the
  rule, `waiting_of`, is every store's), and whether there were more than it read;
- `decisions`: who answered each of a task's answered questions, with what, and when;
- `arguments`: what a task was started with, without its secret arguments.

`TemporalInboxStore` reads them from Temporal: the visibility store (waiting.py) and the task's
history (task_history.py). tests/fakes/memory_inbox.py is the in-memory one of the in-process
tier, held to this one by tests/contract/test_inbox_store_contract.py. Errors are the task
layer's own (errors.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from temporalio.client import Client

from mcp_server.tasks.task_history import Arguments, Decision, decisions
from mcp_server.tasks.waiting import MAX_READ, Waiting, WaitingTasks


class InboxStore(Protocol):
    async def waiting_all(
        self,
        owner: str,
        approver_ids: frozenset[str] = frozenset(),
        every_approver: bool = False,
        limit: int = MAX_READ,
    ) -> tuple[list[Waiting], bool]: ...
    async def decisions(self, task_id: str, keys: set[str]) -> dict[str, Decision]: ...
    async def arguments(self, task_id: str) -> dict[str, Any]: ...


class TemporalInboxStore:
    def __init__(self, client: Client) -> None:
        self._client = client
        self._waiting = WaitingTasks(client)
        self._arguments = Arguments(client)

    async def waiting_all(
        self,
        owner: str,
        approver_ids: frozenset[str] = frozenset(),
        every_approver: bool = False,
        limit: int = MAX_READ,
    ) -> tuple[list[Waiting], bool]:
        return await self._waiting.waiting_all(owner, approver_ids, every_approver, limit)

    async def decisions(self, task_id: str, keys: set[str]) -> dict[str, Decision]:
        """The answers to `keys` (answered questions of the task), as first delivered."""
        return await decisions(self._client, task_id, keys)

    async def arguments(self, task_id: str) -> dict[str, Any]:
        """The task's start arguments without its secret ones (cached); none when its first
        event cannot be read."""
        return await self._arguments.of(task_id)
