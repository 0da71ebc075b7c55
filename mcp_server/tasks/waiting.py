"""The tasks that wait for a principal's input, from Temporal's visibility store (the inbox's
list; no history read, no worker needed).

Rules implemented:
- The query is the contract's: running, `McpStatus="input_required"`, and owned by the
  principal or naming one of its approver ids in `McpApprovers`. The local user (auth none)
  is every approver, so it sees every waiting task that names approvers too (as it may read
  them: mcp_server/tasks/approvers.py).
- Each execution's memo is read with `TaskState.from_memo` and checked again here (the owner,
  or an approver id among the task's outstanding approvers): visibility is a filter, not the
  rule.
- Every waiting task up to `MAX_READ` (visibility's own paging, `READ_PAGE` a page), oldest
  first by createdAt; `waiting_all` says when there were more than it read (the inbox says so,
  and pages through what it read: mcp_server/inbox/paging.py).
- Errors are the task layer's own (`BackendUnavailable` / `BackendRefused`).

The inbox reads it through `InboxStore` (inbox_store.py); `waiting_of` is the rule of every
store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.service import RPCError

from mcp_server.tasks.errors import from_rpc_error
from mcp_server.tasks.listing import STATUS_QUERIES
from mcp_server.tasks.snapshots import TaskSnapshot, snapshot_of
from mcp_server.tasks.timeouts import RPC_TIMEOUT
from mcp_tasks.contracts.approvers import outstanding_ids
from mcp_tasks.contracts.task_state import (
    MEMO_KEY,
    SEARCH_ATTRIBUTE_APPROVERS,
    SEARCH_ATTRIBUTE_OWNER,
    TaskState,
)

MAX_READ = 10_000
READ_PAGE = 1000


@dataclass(frozen=True)
class Waiting:
    """One task in the inbox's list."""

    task_id: str
    tool: str
    created_at: str
    status_message: str | None
    request_keys: tuple[str, ...]
    mine: bool
    # The task as its memo says (what a watcher starts from); not part of `version`.
    snapshot: TaskSnapshot
    requested_by: str | None = None

    @property
    def version(self) -> str:
        """Changes whenever what the list shows of the task changes."""
        text = f"{self.task_id}|{self.status_message}|{','.join(self.request_keys)}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def inbox_query(owner: str, approver_ids: Iterable[str], every_approver: bool) -> str:
    base = STATUS_QUERIES["input_required"]
    if every_approver:
        return base
    ids = sorted(set(approver_ids))
    who = f"{SEARCH_ATTRIBUTE_OWNER}={_quoted(owner)}"
    if ids:
        who += f" OR {SEARCH_ATTRIBUTE_APPROVERS} IN ({', '.join(map(_quoted, ids))})"
    return f"{base} AND ({who})"


def waiting_of(
    state: TaskState, owner: str, approver_ids: frozenset[str], every_approver: bool
) -> Waiting | None:
    """The task as the inbox of `owner` (with `approver_ids`) lists it; None when it waits for
    nothing, or for nobody this principal is (visibility is a filter, not the rule)."""
    if state.status != "input_required":
        return None
    mine = state.owner == owner
    named = bool(state.approvers) if every_approver else _names(state, approver_ids)
    if not (mine or named):
        return None
    return Waiting(
        task_id=state.task_id,
        tool=state.tool,
        created_at=state.created_at,
        status_message=state.status_message,
        request_keys=tuple(sorted(state.input_requests)),
        mine=mine,
        snapshot=snapshot_of(state),
        requested_by=state.requested_by,
    )


def oldest_first(found: list[Waiting]) -> list[Waiting]:
    return sorted(found, key=lambda w: (w.created_at, w.task_id))


class WaitingTasks:
    def __init__(self, client: Client) -> None:
        self._client = client

    async def waiting_all(
        self,
        owner: str,
        approver_ids: frozenset[str] = frozenset(),
        every_approver: bool = False,
        limit: int = MAX_READ,
    ) -> tuple[list[Waiting], bool]:
        """The waiting tasks (oldest first), and whether more than `limit` matched."""
        query = inbox_query(owner, approver_ids, every_approver)
        found: list[Waiting] = []
        read = 0
        try:
            async for execution in self._client.list_workflows(
                query, limit=limit, page_size=min(limit, READ_PAGE), rpc_timeout=RPC_TIMEOUT
            ):
                read += 1
                state = TaskState.from_memo(await execution.memo_value(MEMO_KEY, None))
                if state is None:
                    continue
                waiting = waiting_of(state, owner, approver_ids, every_approver)
                if waiting is not None:
                    found.append(waiting)
        except RPCError as err:
            raise from_rpc_error(err, "list waiting tasks") from err
        return oldest_first(found), read >= limit


def _names(state: TaskState, approver_ids: frozenset[str]) -> bool:
    """Whether an outstanding request of the task names one of `approver_ids`."""
    return not approver_ids.isdisjoint(outstanding_ids(state.approvers, state.input_requests))
