"""The task state a workflow mirrors into its memo, and the messages a task workflow accepts.

Shared by the MCP server (which reads the memo through `describe()`, no worker needed) and the
workflows (which write it). Pure data: safe to import inside the workflow sandbox.

Rules implemented:
- `TaskState` is the memo's one typed model: `to_memo()` and `from_memo()` are the only code
  that knows its keys. Running workflows keep the memos they wrote, so the keys never change
  meaning; a new shape bumps `MEMO_VERSION`, and memos of any earlier version stay readable.
- A memo without a readable task state (another workflow of the namespace, a newer version,
  a malformed value) is not an MCP task: `from_memo()` returns None.
- Timestamps are ISO 8601 UTC with milliseconds, e.g. 2026-08-01T10:30:00.123Z.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, Required, TypedDict

from mcp_tasks.contracts.task_status import TASK_STATUSES, TaskStatus

MEMO_KEY = "mcp"
MEMO_VERSION = 1
SUBMIT_INPUT_SIGNAL = "mcp.submit_input"
CANCEL_REQUESTED_SIGNAL = "mcp.cancel_requested"
STATE_QUERY = "mcp.state"
PROTOCOL_ERROR_TYPE = "McpProtocolError"

# Custom search attributes (Keyword). Operators filter with them, e.g.
#   temporal workflow list -q 'McpStatus="input_required"'
SEARCH_ATTRIBUTE_STATUS = "McpStatus"
SEARCH_ATTRIBUTE_TOOL = "McpTool"
SEARCH_ATTRIBUTE_OWNER = "McpOwner"
# KeywordList: the approver ids (mcp_tasks/contracts/approvers.py) of a task's outstanding requests;
# upserted only by tasks that ever had approvers.
SEARCH_ATTRIBUTE_APPROVERS = "McpApprovers"
# Datetime: since when a task waits at input_required (set as it starts waiting, removed as
# it stops); upserted by runs that reached that point on code with WAITING_SINCE_PATCH, e.g.
#   temporal workflow list -q 'McpWaitingSince < "2026-12-01T00:00:00Z"'
SEARCH_ATTRIBUTE_WAITING_SINCE = "McpWaitingSince"
# Every search attribute the tasks need, in ONE place: `mcp-tasks setup` registers them
# (mcp_server/temporal/setup.py) and the server and worker refuse to start without them, the
# dev server registers them at its start (runtime/devserver.py), the tests' time-skipping
# server too, and `/readyz` checks them (observability/probes.py).
SEARCH_ATTRIBUTES = (
    SEARCH_ATTRIBUTE_STATUS,
    SEARCH_ATTRIBUTE_TOOL,
    SEARCH_ATTRIBUTE_OWNER,
    SEARCH_ATTRIBUTE_APPROVERS,
    SEARCH_ATTRIBUTE_WAITING_SINCE,
)
SearchAttributeType = Literal["Keyword", "KeywordList", "Datetime"]
# Each one's type, as `temporal operator search-attribute create --type` spells it.
SEARCH_ATTRIBUTE_TYPES: dict[str, SearchAttributeType] = {
    SEARCH_ATTRIBUTE_STATUS: "Keyword",
    SEARCH_ATTRIBUTE_TOOL: "Keyword",
    SEARCH_ATTRIBUTE_OWNER: "Keyword",
    SEARCH_ATTRIBUTE_APPROVERS: "KeywordList",
    SEARCH_ATTRIBUTE_WAITING_SINCE: "Datetime",
}
# What a task's step timeline says of each step (TaskState.steps).
STEP_STATUSES = (
    "pending",
    "waiting",
    "running",
    "succeeded",
    "failed",
    "declined",
    "rolled back",
    "skipped",
)


class Step(TypedDict, total=False):
    """One item of a task's step timeline (TaskState.steps), as the memo carries it."""

    name: Required[str]
    status: Required[str]  # one of STEP_STATUSES
    startedAt: str
    endedAt: str
    exitCode: int
    outputTail: str
    rollback: str  # the outcome of its rollback, when it was rolled back


def iso_timestamp(moment: datetime) -> str:
    """`moment` as the task state writes it: UTC, millisecond precision, a `Z` suffix."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_timestamp(value: str) -> datetime:
    """An ISO 8601 timestamp as an aware datetime; one without a timezone is read as UTC (a
    step's times come from any workflow: `mcp-tasks tasks show` must not crash on them)."""
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


@dataclass
class TaskInput:
    """What the server hands a task workflow when it starts it."""

    task_id: str
    tool: str
    arguments: dict[str, Any]
    created_at: str
    ttl_ms: int | None
    poll_interval_ms: int
    owner: str
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    # Answers collected by MRTR rounds of tools/call before the task was created. The name is
    # the stored one: every recorded task's input carries it, so it stays.
    prelude_responses: dict[str, Any] = field(default_factory=dict)
    # Names of arguments whose values must never reach the memo, statusMessage or errors.
    secret_arguments: list[str] = field(default_factory=list)
    # Per-tool settings of a generic workflow (e.g. which workflow an exposed tool starts).
    tool_config: dict[str, Any] = field(default_factory=dict)
    # A digest of the 2025-11-25 session that created the task ("" otherwise): that session's
    # GET stream relays the task's questions.
    session: str = ""
    # The quota workflow holding this task's open-task slot ("" when none: no quota, or a task
    # started before quotas were reserved); the task releases the slot there when it closes.
    quota_workflow_id: str = ""
    # How it releases the slot: "local_activity" (workflows/quota.py), "lazy" (it sends no
    # release: the quota workflow finds it closed), or "" for the signal command of the tasks
    # started before those existed (their histories replay unchanged).
    quota_release: str = ""
    # A digest of (principal, idempotency key, tool, arguments) when the call carried an
    # idempotency key ("" otherwise): a retry with the key must match it (tasks/idempotency.py).
    call_digest: str = ""
    # The webhook endpoints this task notifies, as the server matched them to its tool:
    # [{"endpoint": id, "events": [...]}] (ids and events only; the URLs and secrets are the
    # workers' configuration). Empty: no notification, and no command of the webhooks' own.
    webhooks: list[dict[str, Any]] = field(default_factory=list)
    # Whether the task announces its events to its owner's event subscriptions (SEP-3415,
    # mcp_tasks/contracts/events.py): set when the server offers the events extension. False:
    # no command.
    events: bool = False
    # What the previous run of this task handed on when it continued as new
    # (TaskWorkflow.continue_as_new): a `Carried` as JSON (mcp_tasks/contracts/carried.py, which
    # alone knows its keys). Empty in a task's first run.
    carried: dict[str, Any] = field(default_factory=dict)
    # The display name (subject) of the caller who created the task ("" when not known);
    # `owner` stays the digest that isolates tasks.
    requested_by: str = ""
    # Tasks the creating request named in `_meta["io.modelcontextprotocol/relatedTaskIds"]`,
    # only those its caller may read (mcp_server/protocol/core/related_tasks.py).
    related_task_ids: list[str] = field(default_factory=list)


@dataclass
class SubmitInput:
    """The payload of the `mcp.submit_input` signal that carries a tasks/update."""

    responses: dict[str, Any]
    request_id: str = ""
    principal: str = ""
    # The display name (subject) of who answered, e.g. "alice" or "operator:root".
    by: str = ""


@dataclass(frozen=True)
class SteerMessage:
    """A steer message as a tool reads it: its number in the task, its text, who sent it."""

    seq: int
    message: str
    by: str = ""


@dataclass
class AuditStamp:
    """Who asked for a change: kept in the workflow history (payload of a signal)."""

    principal: str
    request_id: str = ""


class TaskMemo(TypedDict):
    """The task state as the memo holds it under MEMO_KEY (`TaskState.to_memo()`)."""

    v: int
    taskId: str
    tool: str
    owner: str
    createdAt: str
    lastUpdatedAt: str
    ttlMs: int | None
    pollIntervalMs: int | None
    status: TaskStatus
    statusMessage: str | None
    inputRequests: dict[str, Any]
    session: NotRequired[str]
    callDigest: NotRequired[str]
    approvers: NotRequired[dict[str, list[str]]]
    answeredBy: NotRequired[dict[str, str]]
    steps: NotRequired[list[dict[str, Any]]]
    requestedBy: NotRequired[str]
    relatedTaskIds: NotRequired[list[str]]
    progress: NotRequired[dict[str, float]]
    paused: NotRequired[bool]


@dataclass(frozen=True)
class TaskState:
    """What `tasks/get` needs to know about a task, as its workflow last published it."""

    task_id: str
    tool: str
    owner: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None
    status: TaskStatus = "working"
    status_message: str | None = None
    input_requests: dict[str, Any] = field(default_factory=dict)
    # Written only when set, so the memo of every other task is exactly what it always was.
    session: str | None = None
    # Likewise: the call digest of a task started with an idempotency key.
    call_digest: str | None = None
    # Each written only when set. Request key -> approver names as given, for every
    # request of the task that named approvers (kept for the task's whole life).
    approvers: dict[str, list[str]] = field(default_factory=dict)
    # Request key -> display name of who answered it.
    answered_by: dict[str, str] = field(default_factory=dict)
    # A step timeline: [{"name", "status", "startedAt"?, "endedAt"?, "exitCode"?,
    # "outputTail"?, "rollback"?}]; None when the tool publishes none.
    steps: list[dict[str, Any]] | None = None
    # The display name of the caller who created the task.
    requested_by: str | None = None
    # Tasks the creating request called related (TaskInput.related_task_ids); written only
    # when there are some.
    related_task_ids: list[str] = field(default_factory=list)
    # How far the task is, as its workflow last reported it: {"progress": n, "total"?: m}
    # (a step n of m, or a fraction with total 1); written only when set.
    progress: dict[str, float] | None = None
    # Whether the task holds at a safe point after a pause (workflows/steering.py); written
    # only when true.
    paused: bool = False

    @classmethod
    def initial(cls, task: TaskInput, status_message: str) -> TaskState:
        """The state a task starts with, written by the server with the workflow's start."""
        return cls(
            task_id=task.task_id,
            tool=task.tool,
            owner=task.owner,
            created_at=task.created_at,
            last_updated_at=task.created_at,
            ttl_ms=task.ttl_ms,
            poll_interval_ms=task.poll_interval_ms,
            status_message=status_message,
            session=task.session or None,
            call_digest=task.call_digest or None,
            requested_by=task.requested_by or None,
            related_task_ids=list(task.related_task_ids),
        )

    def to_memo(self) -> TaskMemo:
        memo: TaskMemo = {
            "v": MEMO_VERSION,
            "taskId": self.task_id,
            "tool": self.tool,
            "owner": self.owner,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_interval_ms,
            "status": self.status,
            "statusMessage": self.status_message,
            "inputRequests": dict(self.input_requests),
        }
        # Each of the others is written only when set, so every other memo stays as it was.
        if self.session:
            memo["session"] = self.session
        if self.call_digest:
            memo["callDigest"] = self.call_digest
        if self.approvers:
            memo["approvers"] = _copy_lists(self.approvers)
        if self.answered_by:
            memo["answeredBy"] = dict(self.answered_by)
        if self.steps is not None:
            memo["steps"] = [dict(step) for step in self.steps]
        if self.requested_by:
            memo["requestedBy"] = self.requested_by
        if self.related_task_ids:
            memo["relatedTaskIds"] = list(self.related_task_ids)
        if self.progress is not None:
            memo["progress"] = dict(self.progress)
        if self.paused:
            memo["paused"] = True
        return memo

    @classmethod
    def from_memo(cls, memo: object) -> TaskState | None:
        """The state in a memo written by any version up to this one; None if there is none."""
        if not isinstance(memo, dict):
            return None
        version = memo.get("v")
        if not isinstance(version, int) or isinstance(version, bool):
            return None
        if not 1 <= version <= MEMO_VERSION:
            return None
        task_id, created_at = memo.get("taskId"), memo.get("createdAt")
        status = memo.get("status") or "working"
        if not (isinstance(task_id, str) and isinstance(created_at, str)):
            return None
        if status not in TASK_STATUSES:
            return None
        message, requests = memo.get("statusMessage"), memo.get("inputRequests")
        return cls(
            task_id=task_id,
            tool=str(memo.get("tool", "")),
            owner=str(memo.get("owner", "")),
            created_at=created_at,
            last_updated_at=str(memo.get("lastUpdatedAt") or created_at),
            ttl_ms=_optional_int(memo.get("ttlMs")),
            poll_interval_ms=_optional_int(memo.get("pollIntervalMs")),
            status=status,
            status_message=message if isinstance(message, str) else None,
            input_requests=dict(requests) if isinstance(requests, dict) else {},
            session=session if isinstance(session := memo.get("session"), str) else None,
            call_digest=digest if isinstance(digest := memo.get("callDigest"), str) else None,
            approvers=_approvers(memo.get("approvers")),
            answered_by=_strings(memo.get("answeredBy")),
            steps=_steps(memo.get("steps")),
            requested_by=by if isinstance(by := memo.get("requestedBy"), str) else None,
            related_task_ids=_string_list(memo.get("relatedTaskIds")),
            progress=_progress(memo.get("progress")),
            paused=memo.get("paused") is True,
        )


def _optional_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _string_list(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _progress(value: object) -> dict[str, float] | None:
    """The memo's "progress": its numbers, None when it has no `progress` number."""
    if not isinstance(value, dict):
        return None
    numbers = {
        key: number
        for key in ("progress", "total")
        if isinstance(number := value.get(key), int | float) and not isinstance(number, bool)
    }
    return numbers if "progress" in numbers else None


def _copy_lists(value: dict[str, list[str]]) -> dict[str, list[str]]:
    return {key: list(names) for key, names in value.items()}


def _approvers(value: object) -> dict[str, list[str]]:
    """The memo's "approvers", keeping only well-formed entries (key -> list of strings)."""
    if not isinstance(value, dict):
        return {}
    return {
        str(key): [name for name in names if isinstance(name, str)]
        for key, names in value.items()
        if isinstance(names, list)
    }


def _strings(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(key): text for key, text in value.items() if isinstance(text, str)}


def _steps(value: object) -> list[dict[str, Any]] | None:
    """The memo's "steps": the items that are objects with a name and a known status."""
    if not isinstance(value, list):
        return None
    return [
        dict(step)
        for step in value
        if isinstance(step, dict)
        and isinstance(step.get("name"), str)
        and step.get("status") in STEP_STATUSES
    ]
