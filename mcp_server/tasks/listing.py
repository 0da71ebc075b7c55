"""What operators read from Temporal about tasks, beside the store (`mcp-tasks tasks`).

- `list_tasks`: MCP tasks found in the visibility store by status, tool, owner and approver
  (the McpStatus, McpTool, McpOwner and McpApprovers search attributes), task queue (Temporal's
  TaskQueue), and how long they have waited for input (McpWaitingSince), newest first (oldest
  wait first when filtering by wait). Runs that continued as new and workflows that are not MCP
  tasks are skipped. Each task says since when it waits: McpWaitingSince, or for a task whose
  wait began before that attribute existed (WAITING_SINCE_PATCH), its memo's lastUpdatedAt
  (the last change it published, the start of its wait unless an answer came in part).
- `task_detail`: what Temporal knows of one task beyond its snapshot (tool, run id, workflow
  type, task queue, history length), read with one `describe()`.

Every value that reaches a visibility query is checked first (`TaskFilter.query`): a status is
one of the five, a tool name and a scope hold only characters that need no quoting, and a
principal is hashed to the digest Temporal stores (never the subject itself). A value that does
not pass is an `InvalidFilter`, so nothing a user typed is ever quoted into a query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import BackendRefused, from_rpc_error
from mcp_server.tasks.snapshots import TaskSnapshot, listed_snapshot
from mcp_server.tasks.timeouts import RPC_TIMEOUT
from mcp_tasks.contracts.approvers import PRINCIPAL_PREFIX, SCOPE_PREFIX
from mcp_tasks.contracts.task_state import (
    MEMO_KEY,
    SEARCH_ATTRIBUTE_APPROVERS,
    SEARCH_ATTRIBUTE_OWNER,
    SEARCH_ATTRIBUTE_STATUS,
    SEARCH_ATTRIBUTE_TOOL,
    SEARCH_ATTRIBUTE_WAITING_SINCE,
    SEARCH_ATTRIBUTES,
    TaskState,
    iso_timestamp,
    parse_timestamp,
)
from mcp_tasks.contracts.task_status import (
    CLOSED_BY_EXECUTION,
    OPEN_STATUSES,
    TASK_STATUSES,
    TaskStatus,
)
from mcp_tasks.identity import Principal


def _status_query(status: TaskStatus) -> str:
    """Where a status lives: the search attribute while the task runs, the execution once it
    closed (a failed workflow never upserts "failed"): the executions `closed_status` reads so."""
    if status in OPEN_STATUSES:
        return f'ExecutionStatus="Running" AND {SEARCH_ATTRIBUTE_STATUS}="{status}"'
    # Visibility spells a `WorkflowExecutionStatus` name in CamelCase (TIMED_OUT: TimedOut).
    names = [
        f'"{execution.title().replace("_", "")}"'
        for execution, closed in CLOSED_BY_EXECUTION.items()
        if closed == status
    ]
    if len(names) == 1:
        return f"ExecutionStatus={names[0]}"
    return f"ExecutionStatus IN ({', '.join(names)})"


STATUS_QUERIES: dict[TaskStatus, str] = {status: _status_query(status) for status in TASK_STATUSES}
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-/]{1,128}")
_SCOPE_NAME = re.compile(r"scope:[A-Za-z0-9_.:\-/]{1,200}")
_DIGEST = re.compile(r"[0-9a-f]{32}")
# Temporal's task queue names: no quotes, no control characters; kept to what needs no quoting.
_TASK_QUEUE = re.compile(r"[A-Za-z0-9_.:\-/@]{1,255}")
# What Temporal answers a query naming an attribute the namespace does not have.
_UNREGISTERED = re.compile(r"invalid search attribute: (\w+)")
WAITING_SINCE_KEY = SearchAttributeKey.for_datetime(SEARCH_ATTRIBUTE_WAITING_SINCE)


class InvalidFilter(ValueError):
    """A filter value that cannot be searched for; the message names it."""


def owner_digest(principal: str) -> str:
    """What McpOwner holds for `principal`: a 32-hex digest as given, else the digest of the
    subject (Principal(subject).digest, as the server computes it for a caller without an
    OAuth client)."""
    if not principal:
        raise InvalidFilter("a principal must not be empty")
    return principal if _DIGEST.fullmatch(principal) else Principal(principal).digest


def approver_id(approver: str) -> str:
    """The McpApprovers entry naming `approver` (mcp_tasks/contracts/approvers.py):
    `scope:<name>` as given, else `principal:<digest>` of a subject (or of a 32-hex digest
    given as is)."""
    if approver.startswith(SCOPE_PREFIX):
        if not _SCOPE_NAME.fullmatch(approver):
            raise InvalidFilter(
                f"approver {approver!r}: a scope's name holds only letters, digits and _ . : - /"
            )
        return approver
    return PRINCIPAL_PREFIX + owner_digest(approver)


def _quoted(value: str) -> str:
    # Every value was checked to hold none of these; never let one through regardless.
    if any(char in value for char in "\"'\\") or not value.isprintable():
        raise InvalidFilter(f"{value!r} cannot be searched for")
    return f'"{value}"'


@dataclass(frozen=True)
class TaskFilter:
    status: str | None = None
    tool: str | None = None
    owner: str | None = None
    approver: str | None = None
    # Only this task queue's tasks (None: every queue of the namespace).
    task_queue: str | None = None
    # Only tasks waiting for input since before this moment (aware).
    waiting_before: datetime | None = None

    def query(self) -> str:
        """The visibility query of this filter; InvalidFilter for a value it cannot hold."""
        parts = [f"{SEARCH_ATTRIBUTE_TOOL} IS NOT NULL", 'ExecutionStatus!="ContinuedAsNew"']
        if self.status is not None:
            if self.status not in STATUS_QUERIES:
                raise InvalidFilter(
                    f"unknown status {self.status!r}; one of {', '.join(TASK_STATUSES)}"
                )
            parts.append(STATUS_QUERIES[self.status])
        if self.tool is not None:
            if not _TOOL_NAME.fullmatch(self.tool):
                raise InvalidFilter(
                    f"tool {self.tool!r}: a tool name holds only letters, digits and _ . - /"
                )
            parts.append(f"{SEARCH_ATTRIBUTE_TOOL}={_quoted(self.tool)}")
        if self.owner is not None:
            parts.append(f"{SEARCH_ATTRIBUTE_OWNER}={_quoted(owner_digest(self.owner))}")
        if self.approver is not None:
            parts.append(f"{SEARCH_ATTRIBUTE_APPROVERS}={_quoted(approver_id(self.approver))}")
        if self.task_queue is not None:
            if not _TASK_QUEUE.fullmatch(self.task_queue):
                raise InvalidFilter(f"task queue {self.task_queue!r} cannot be searched for")
            parts.append(f"TaskQueue={_quoted(self.task_queue)}")
        if self.waiting_before is not None:
            parts += self._waiting_parts(self.waiting_before)
        return " AND ".join(parts)

    def _waiting_parts(self, before: datetime) -> list[str]:
        if self.status not in (None, "input_required"):
            raise InvalidFilter(f"a task that is {self.status} waits for nothing")
        since = _quoted(iso_timestamp(before))
        waiting = SEARCH_ATTRIBUTE_WAITING_SINCE
        # A wait that began before McpWaitingSince existed has none: list_tasks reads its memo.
        parts = [f"({waiting} < {since} OR {waiting} IS NULL)"]
        return parts if self.status else [STATUS_QUERIES["input_required"], *parts]


@dataclass(frozen=True)
class ListedTask:
    tool: str
    snapshot: TaskSnapshot
    run_id: str
    # Since when it waits for input (ISO 8601), while it does (see the module's doc).
    waiting_since: str | None = None
    task_queue: str = ""


async def list_tasks(client: Client, where: TaskFilter, limit: int) -> list[ListedTask]:
    """At most `limit` MCP tasks matching `where`, newest (by createdAt) first; with
    `where.waiting_before`, the longest wait first."""
    query = where.query()
    found: list[ListedTask] = []
    try:
        async for execution in client.list_workflows(
            query, limit=limit, page_size=min(limit, 1000), rpc_timeout=RPC_TIMEOUT
        ):
            # Strict, unlike the server's listings (memo.py): an operator whose CLI lacks the
            # payload key must hear so (PayloadKeyError names the setting), not see fewer tasks.
            state = TaskState.from_memo(await execution.memo_value(MEMO_KEY, None))
            if state is None:
                continue  # another workflow of the namespace that sets McpTool
            snapshot = listed_snapshot(state, execution.status)
            since = _waiting_since(
                execution.typed_search_attributes.get(WAITING_SINCE_KEY), snapshot
            )
            if where.waiting_before is not None and not _waited(since, where.waiting_before):
                continue  # no McpWaitingSince, and its memo says it waits since later
            found.append(
                ListedTask(
                    state.tool, snapshot, execution.run_id or "", since, execution.task_queue
                )
            )
    except RPCError as err:
        raise _visibility_error(err, where) from err
    if where.waiting_before is not None:
        return sorted(found, key=lambda task: task.waiting_since or "")
    return sorted(found, key=lambda task: task.snapshot.created_at, reverse=True)


def _waiting_since(attribute: datetime | None, snapshot: TaskSnapshot) -> str | None:
    if snapshot.status != "input_required":
        return None
    return iso_timestamp(attribute) if attribute is not None else snapshot.last_updated_at


def _waited(since: str | None, before: datetime) -> bool:
    try:
        return since is not None and parse_timestamp(since) < before
    except ValueError:
        return False


def _visibility_error(err: RPCError, where: TaskFilter) -> Exception:
    if err.status == RPCStatusCode.INVALID_ARGUMENT:
        if where.approver is not None and SEARCH_ATTRIBUTE_APPROVERS in err.message:
            return InvalidFilter(
                f"this namespace has no {SEARCH_ATTRIBUTE_APPROVERS} search attribute yet "
                "(no task has named approvers): nothing to find by --approver"
            )
        unregistered = _UNREGISTERED.search(err.message)
        if unregistered and unregistered.group(1) in SEARCH_ATTRIBUTES:
            return InvalidFilter(
                f"this namespace has no {unregistered.group(1)} search attribute: it is not set "
                "up for mcp-tasks yet; run `mcp-tasks setup` with the same settings once"
            )
        return InvalidFilter(f"Temporal refused the query: {err.message}")
    if err.status == RPCStatusCode.NOT_FOUND and "namespace" in err.message.lower():
        return BackendRefused(
            "Temporal",
            "list tasks",
            f"{err.message.rstrip('.')} (the namespace MCP_TASKS_NAMESPACE names): create it, "
            "then run `mcp-tasks setup` with the same settings",
        )
    return from_rpc_error(err, "list tasks")


@dataclass(frozen=True)
class TaskDetail:
    """What Temporal knows of a task that `tasks/get` does not show."""

    tool: str
    owner: str
    run_id: str
    workflow_type: str
    task_queue: str
    execution_status: str
    history_length: int


async def task_detail(client: Client, task_id: str) -> TaskDetail | None:
    """The Temporal detail of the MCP task `task_id`, None when there is none."""
    try:
        description = await client.get_workflow_handle(task_id).describe(rpc_timeout=RPC_TIMEOUT)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise from_rpc_error(err, "read the task") from err
    state = TaskState.from_memo(await description.memo_value(MEMO_KEY, None))
    if state is None:
        return None
    status = description.status or WorkflowExecutionStatus.RUNNING
    return TaskDetail(
        tool=state.tool,
        owner=state.owner,
        run_id=description.run_id,
        workflow_type=description.workflow_type,
        task_queue=description.task_queue,
        execution_status=status.name.lower(),
        history_length=description.history_length,
    )
