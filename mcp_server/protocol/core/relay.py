"""A task followed for one caller, its progress and questions relayed on the call's stream: a
task tool run attached to its `tools/call` for hosts that do not use tasks, and the 2025-11-25
`tasks/result` and session stream (v2025/).

A host without task support (2026-07-28 without the extension for a tool that allows it, or
2025-11-25 without the `task` parameter) still gets the work done:
- The task is created exactly as for a task-aware client (durable, owned by the caller), and
  the call waits for it, at most `Services.sync_wait_s` (well under usual host time-outs).
- While it waits, when the request carries a `progressToken`: each new statusMessage goes out
  as `notifications/progress` with a count of the messages; once the task reported numbers
  (TaskState.progress), each change of them goes out with `progress` and `total` and the
  message (progress_mark). `progress` must grow with every notification (MCP), so the numbers
  go on from the count already sent: step 2 of 3 after two messages is 4 of 5
  (ProgressRelay); a number that goes back sends nothing. At 2025-11-25, each question the task
  asks goes out as a request to the client (`elicitation/create`, `sampling/createMessage`,
  `roots/list`) when the session declared the capability it needs, on the response stream,
  related to the task. Its id names the task and the input key (`input_request_id`), so the
  client's response may reach any replica and is delivered to the workflow as a
  `tasks/update` would be.
  An answer the task refuses is asked again under a new id, saying what was wrong
  (refused_answers.py).
- What the call then answers (the result, an InputRequiredResult round at 2026-07-28, or the
  follow-up result naming the taskId and the follow-up tools) is attached/rounds.py's. The task
  is never stopped because a host stopped waiting: nothing a host does can lose it.
- A 2025-11-25 session's GET stream (session_stream.py) relays the questions of the tasks
  that session created, for clients that never call `tasks/result` while input is needed;
  `Services.relays` (protocol/frame/relays.py) keeps the two from asking a client the same question
  twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any, get_args

import mcp_types as core
from mcp_types.jsonrpc import JSONRPCRequest

from mcp_server.protocol.core import capabilities, refused_answers
from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.refused_answers import Refusals
from mcp_server.protocol.core.views import RELATED_TASK, tool_result
from mcp_server.protocol.frame.errors import task_not_found
from mcp_server.protocol.frame.models import Notification, to_message
from mcp_server.protocol.frame.wire import V2025
from mcp_server.tasks.access import find_task
from mcp_server.tasks.approvers import may_answer
from mcp_server.tasks.errors import TaskFailed
from mcp_server.tasks.following import End
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tools.registry import Logger, ProgressReporter
from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES

# Log levels from least to most severe (RFC 5424 order, as the LoggingLevel type lists them).
LOG_LEVELS: tuple[str, ...] = get_args(core.LoggingLevel)
# A follow whose watcher failed a read (Temporal) reads the task again this much later.
_RETRY_AFTER_FAILURE_S = 1.0


def input_request_id(task_id: str, key: str, attempt: int = 0) -> str:
    """The JSON-RPC id of a server-to-client request asking a task's question `key`."""
    return refused_answers.request_id(task_id, key, attempt)


def parse_input_request_id(request_id: object) -> tuple[str, str] | None:
    """(taskId, key) of an id made by `input_request_id`, else None."""
    return refused_answers.parse_request_id(request_id)


def progress_reporter(ctx: RequestContext) -> ProgressReporter:
    """Sends `notifications/progress` for this request, or nothing when it asked for none."""

    async def report(progress: float, total: float | None, message: str | None) -> None:
        if ctx.progress_token is None:
            return
        params = core.ProgressNotificationParams(
            progress_token=ctx.progress_token, progress=progress, total=total, message=message
        )
        await ctx.send(to_message(Notification(method="notifications/progress", params=params)))

    return report


class ProgressRelay:
    """`progress` and `total` of each notification one attached call sends: the count of the
    messages while the task reported no numbers, then its numbers after that count (a step n of
    m after k messages is k+n of k+m), so that `progress` grows with every notification as MCP
    requires; None when a notification would not grow it (the numbers went back)."""

    def __init__(self) -> None:
        self.sent: float = 0
        self.offset: float | None = None

    def next(self, snapshot: TaskSnapshot) -> tuple[float, float | None] | None:
        reported = snapshot.progress
        if reported is not None and "progress" in reported:
            if self.offset is None:
                self.offset = self.sent
            total = reported.get("total")
            progress = self.offset + reported["progress"]
            relayed = progress, None if total is None else self.offset + total
        else:
            relayed = self.sent + 1, None
        if relayed[0] <= self.sent:
            return None
        self.sent = relayed[0]
        return relayed


def progress_mark(snapshot: TaskSnapshot) -> object:
    """What must change for the call to send another `notifications/progress`: the numbers the
    task reported, once it reported some (a new message at the same step is not progress, and
    each notification's `progress` must be larger than the last), else its message."""
    if snapshot.progress is not None:
        return tuple(sorted(snapshot.progress.items()))
    return snapshot.status_message


def log_sender(ctx: RequestContext, threshold: str | None) -> Logger:
    """Sends `notifications/message` for this request at `threshold` and above; nothing at all
    when `threshold` is None (the request asked for no log messages)."""

    async def log(level: str, data: Any) -> None:
        if threshold is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        params = core.LoggingMessageNotificationParams.model_validate(
            {"level": level, "data": data}
        )
        await ctx.send(to_message(Notification(method="notifications/message", params=params)))

    return log


def outcome(snapshot: TaskSnapshot) -> core.CallToolResult:
    """The result of a terminal task, as the synchronous call returns it."""
    if snapshot.status == "completed" and snapshot.result is not None:
        return tool_result(snapshot.result)
    if snapshot.status == "failed" and snapshot.error is not None:
        error = snapshot.error
        raise TaskFailed(error.code, error.message, error.data)
    text = f"Task {snapshot.task_id} was cancelled: {snapshot.status_message or 'Cancelled'}"
    return core.CallToolResult(content=[core.TextContent(type="text", text=text)], is_error=True)


def can_answer(
    ctx: RequestContext, request: dict[str, Any], snapshot: TaskSnapshot, key: str
) -> bool:
    """Whether this caller may answer `key` (approvers.py: a request that names approvers is
    theirs) and the session declared what `request` needs (elicitation in its mode, sampling,
    roots). A question it cannot take stays outstanding, for `task_respond` or its approver."""
    if not may_answer(key, snapshot.owner, snapshot.approvers, ctx.principal, ctx.identity):
        return False
    try:
        needed = capabilities.required_for_input(request)
    except ValueError:
        return False
    return not capabilities.missing(ctx.capabilities, needed)


async def ask(
    ctx: RequestContext, snapshot: TaskSnapshot, asked: set[str], refusals: Refusals | None = None
) -> None:
    """Send the task's new questions to a 2025-11-25 client as server-to-client requests; a
    question whose answer was refused goes again, saying what was wrong."""
    refused = refusals or Refusals()
    for key, request in snapshot.input_requests.items():
        if key in asked or not can_answer(ctx, request, snapshot, key):
            continue
        asked.add(key)
        params = dict(request.get("params") or {})
        if key in refused.problems:
            problem = refused.problems[key]
            params["message"] = (
                f"Your previous answer was not accepted: {problem}. {params.get('message', '')}"
            )
        params["_meta"] = {
            **(params.get("_meta") or {}),
            RELATED_TASK: {"taskId": snapshot.task_id},
        }
        message = JSONRPCRequest(
            jsonrpc="2.0",
            id=input_request_id(snapshot.task_id, key, refused.counts.get(key, 0)),
            method=str(request["method"]),
            params=params,
        )
        await ctx.send(to_message(message))


def _stuck(ctx: RequestContext, snapshot: TaskSnapshot) -> bool:
    """Whether the task waits on a question this caller cannot be asked on this call."""
    if snapshot.status != "input_required":
        return False
    askable = ctx.era == V2025 and ctx.streaming
    return not askable or not all(
        can_answer(ctx, request, snapshot, key) for key, request in snapshot.input_requests.items()
    )


async def follow(
    ctx: RequestContext,
    services: Services,
    task_id: str,
    wait_s: float | None,
    *,
    until_stuck: bool = False,
    refusals: Refusals | None = None,
) -> TaskSnapshot:
    """Watch a task until it is terminal (or `wait_s` passes), relaying progress and, where the
    client can take them, its questions. With `until_stuck`, also stop as soon as the task waits
    on a question this call cannot relay: waiting longer would only delay the follow-up (or the
    round that asks it, attached/rounds.py). With `refusals`, a relayed question whose answer
    the task refused is asked again (refused_answers.py) until it was refused too often; then
    an attached call (`until_stuck`) stops, and a tasks/result call waits without asking.
    Returns the last snapshot read.

    The task is read once here (the access check of tasks/get), then followed through the
    replica's watcher of it (tasks/watchers.py, shared with listen streams and the inbox): one
    history long-poll, a re-read only after new events, nothing while the task is quiet."""
    watchers = services.listening.watchers
    started = watchers.timer.now()  # the wait includes the first read
    snapshot = await _read(ctx, services, task_id)
    within_s = None if wait_s is None else wait_s - (watchers.timer.now() - started)
    relayer = _Relayer(ctx, services, task_id, until_stuck, refusals)
    async with watchers.following([snapshot], within_s=within_s) as updates:
        with relayer.relaying(updates.nudge):
            async for news in updates:
                snapshot = news.changed.get(task_id, snapshot)
                if (ended := news.ended.get(task_id)) is not None:  # and it was not terminal
                    snapshot = updates.add(await _read_again(ctx, services, task_id, ended))
                if snapshot.status in TERMINAL_STATUSES or await relayer.relay(snapshot):
                    return snapshot
    return snapshot


class _Relayer:
    """What one follow relays to its client: progress, and the task's questions where the
    client can be asked them (again, once an answer was refused)."""

    def __init__(
        self,
        ctx: RequestContext,
        services: Services,
        task_id: str,
        until_stuck: bool,
        refusals: Refusals | None,
    ) -> None:
        self.ctx = ctx
        self.relays = services.relays
        self.task_id = task_id
        self.until_stuck = until_stuck
        self.refusals = refusals
        self.can_ask = ctx.era == V2025 and ctx.streaming
        self.report = progress_reporter(ctx)
        sent_before = self.relays.sent_on_session_stream.get((ctx.session or "", task_id), set())
        self.asked: set[str] = set(sent_before) if ctx.session else set()
        self.last_sent: object = None
        self.progress = ProgressRelay()

    @contextlib.contextmanager
    def relaying(self, nudge: Callable[[], None]) -> Iterator[None]:
        """While the follow runs: the session's GET stream leaves the task's questions to it,
        and a refused answer nudges it; once it ends, a question it left open is theirs again."""
        relays, task_id = self.relays, self.task_id
        relays.relaying[task_id] += 1
        if self.refusals is not None:
            relays.refused.watch(task_id, nudge)
        try:
            yield
        finally:
            if self.refusals is not None:
                relays.refused.unwatch(task_id, nudge)
            relays.relaying[task_id] -= 1
            if not relays.relaying[task_id]:
                del relays.relaying[task_id]
                for nudge_stream in relays.session_streams:
                    nudge_stream()

    async def relay(self, snapshot: TaskSnapshot) -> bool:
        """Relay what is new in `snapshot`; True when the follow should stop here."""
        await self._report(snapshot)
        if self._refused_too_often():
            return True  # the follow-up result names the problem
        if self.can_ask and snapshot.status == "input_required":
            await ask(self.ctx, snapshot, self.asked, self.refusals)
        return self.until_stuck and _stuck(self.ctx, snapshot)

    def _refused_too_often(self) -> bool:
        """Take the answers refused since the last look (each question is asked again, saying
        what was wrong); True when an attached call should stop asking."""
        refusals = self.refusals
        if not self.can_ask or refusals is None:
            return False
        for key, problem in self.relays.refused.take(self.task_id).items():
            if key in self.asked and refusals.add(key, problem):
                self.asked.discard(key)
        return self.until_stuck and refusals.exhausted

    async def _report(self, snapshot: TaskSnapshot) -> None:
        if snapshot.status_message and progress_mark(snapshot) != self.last_sent:
            self.last_sent = progress_mark(snapshot)
            if (relayed := self.progress.next(snapshot)) is not None:
                await self.report(*relayed, snapshot.status_message)


async def _read(ctx: RequestContext, services: Services, task_id: str) -> TaskSnapshot:
    """The task as tasks/get reads it for this caller, or "not found"."""
    snapshot = await find_task(
        services.store, task_id, ctx.principal, services.clock, identity=ctx.identity
    )
    if snapshot is None:
        raise task_not_found()
    return snapshot


async def _read_again(
    ctx: RequestContext, services: Services, task_id: str, ended: End
) -> TaskSnapshot:
    """The watcher of a task stopped before the task ended: "not found" when the task is gone
    (deleted, or past its TTL); after a failed read (Temporal), read it here again, a second
    later (raising what Temporal raises), to follow it anew."""
    if ended == "gone":
        raise task_not_found()
    await asyncio.sleep(_RETRY_AFTER_FAILURE_S)
    return await _read(ctx, services, task_id)


async def run_attached(
    ctx: RequestContext,
    services: Services,
    task: TaskInput,
    workflow: str,
    wait_s: float,
    refusals: Refusals,
) -> TaskSnapshot:
    """Start the task and follow it at most `wait_s` (the tool's own bound, or the server's),
    or until it waits on a question this call cannot relay. Returns the last snapshot: what
    the call answers is attached/rounds.py's to decide."""
    created = await services.limits.within_open_task_quota(
        lambda quota: services.store.create(task, workflow, quota)
    )
    # The store may have given the task an id reserved ahead with its quota slot.
    wait = attached_wait(services, wait_s)
    return await follow(ctx, services, created.task_id, wait, until_stuck=True, refusals=refusals)


def attached_wait(services: Services, wait_s: float) -> float:
    """How long an attached call waits for its task: the tool's bound, capped by the server's."""
    return min(wait_s, services.sync_wait_s)
