"""What the task store reads from Temporal's visibility store (tasks/store.py): a page of an
owner's tasks (`list_owned`, from their memos, no history read) and how many of them run
(`count_open`).
"""

from __future__ import annotations

import base64

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import from_rpc_error
from mcp_server.tasks.memo import task_state_of
from mcp_server.tasks.snapshot_reads import SnapshotReads
from mcp_server.tasks.snapshots import TaskSnapshot, listed_snapshot
from mcp_server.tasks.timeouts import RPC_TIMEOUT
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_OWNER


class TaskVisibility(SnapshotReads):
    """The listings: a part of `TemporalTaskStore` (store.py), which sets these attributes."""

    _client: Client

    async def count_open(self, owner: str) -> int:
        """`owner`'s running tasks in the visibility store, which lags: not the quota (that is
        quota.py's reservations), only what bench/quota.py compares it with."""
        query = f'{SEARCH_ATTRIBUTE_OWNER}="{owner}" AND ExecutionStatus="Running"'
        try:
            return (await self._client.count_workflows(query, rpc_timeout=RPC_TIMEOUT)).count
        except RPCError as err:
            raise from_rpc_error(err, "count open tasks") from err

    async def list_owned(
        self, owner: str, page_size: int, cursor: str | None
    ) -> tuple[list[TaskSnapshot], str | None]:
        """One page of `owner`'s tasks, in the visibility store's order (the memo,
        no history read). `cursor` is the opaque token of the previous page; a malformed one
        is a ValueError."""
        try:
            token = base64.urlsafe_b64decode(cursor.encode("ascii")) if cursor else None
        except (ValueError, UnicodeError) as err:
            raise ValueError("malformed cursor") from err
        # A task that continued as new is one task: only its newest run is listed.
        query = f'{SEARCH_ATTRIBUTE_OWNER}="{owner}" AND ExecutionStatus!="ContinuedAsNew"'
        pages = self._client.list_workflows(
            query, page_size=page_size, next_page_token=token, rpc_timeout=RPC_TIMEOUT
        )
        try:
            await pages.fetch_next_page()
        except RPCError as err:
            if err.status == RPCStatusCode.INVALID_ARGUMENT:
                raise ValueError(err.message) from err
            raise from_rpc_error(err, "list tasks") from err
        snapshots: list[TaskSnapshot] = []
        for execution in pages.current_page or []:
            state = await task_state_of(execution)
            if state is None or state.owner != owner:
                continue
            snapshots.append(self._advertise(listed_snapshot(state, execution.status)))
        next_token = pages.next_page_token
        next_cursor = base64.urlsafe_b64encode(next_token).decode("ascii") if next_token else None
        return snapshots, next_cursor
