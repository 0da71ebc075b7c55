"""`mcp-tasks tasks list|show|answer|cancel|webhooks`: operators find, read, answer and cancel
tasks from a terminal (and see the webhook deliveries still retrying,
mcp_server/tasks/pending_webhooks.py), straight from Temporal (the same MCP_TASKS_* connection
settings as `server` and `worker`, payload key included), without knowing a taskId in advance
and without an MCP client.

An operator with Temporal access is past every check of the MCP server: `tasks answer` answers
any task's question, whoever it waits for (approvers do not bind it), and `tasks cancel` cancels
any task as `tasks/cancel` does; each writes an audit line and a span, as the server's do. It is
the Temporal side door of docs/operations/security.md, with the answer checked as
tasks/update checks it and recorded under the operator's own principal (OPERATOR_DIGEST, `by` =
"operator:<login>").

Exit codes: 0 done; EXIT_REFUSED (1) unknown or closed task, unknown key, nothing to answer or
to cancel; EXIT_INVALID (2) an invalid answer or filter (and argparse's usage errors);
EXIT_UNREACHABLE (3) Temporal unreachable or too slow.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import getpass
import hashlib
import json
import logging
import os
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client

from mcp_server.observability import tracing
from mcp_server.protocol.frame import state_keys
from mcp_server.protocol.frame.errors import McpError
from mcp_server.protocol.limits.per_principal import Limits, PollLimiter
from mcp_server.runtime import operator_answers as answers
from mcp_server.runtime import operator_views as views
from mcp_server.runtime.operator_args import add_parser
from mcp_server.runtime.operator_events import subscriptions_command
from mcp_server.tasks.errors import BackendUnavailable, TaskError
from mcp_server.tasks.listing import (
    InvalidFilter,
    TaskFilter,
    list_tasks,
    owner_digest,
    task_detail,
)
from mcp_server.tasks.pending_webhooks import by_endpoint, pending_deliveries
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tasks.ui_links import workflow_url
from mcp_server.temporal.connection import connect
from mcp_server.temporal.setup import ClusterProblem
from mcp_tasks.contracts.task_state import AuditStamp, SubmitInput
from mcp_tasks.contracts.task_status import TERMINAL_STATUSES
from mcp_tasks.logging import configure as configure_logging
from mcp_tasks.logging import principal_key, principal_tag
from mcp_tasks.settings import Settings

EXIT_REFUSED = 1
EXIT_INVALID = 2
EXIT_UNREACHABLE = 3
CONNECT_TIMEOUT_S = 10.0
__all__ = ["EXIT_INVALID", "EXIT_REFUSED", "EXIT_UNREACHABLE", "add_parser", "run"]
# The principal of every answer sent from the terminal: in a domain of its own, so no MCP
# caller's digest (Principal.digest hashes "principal:...") can be it.
OPERATOR_DIGEST = hashlib.sha256(b"operator-cli").hexdigest()[:32]
AUDIT = logging.getLogger("mcp_server.protocol.audit")


class Refusal(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def run(args: argparse.Namespace) -> int:
    """Run one `tasks` command; its exit code (messages on stderr, one line)."""
    try:
        settings = Settings.from_env().with_(worker_metrics_port=None)
        # Logs (its audit lines) on stderr, in the text format unless MCP_TASKS_LOG_FORMAT
        # says otherwise; spans as the server's, when tracing is configured.
        configure_logging(
            settings.log_format or "text", os.environ.get("MCP_TASKS_LOG_LEVEL", "INFO")
        )
        tracing.configure(settings.otlp_endpoint, "mcp-tasks-operator-cli")
        try:
            code = asyncio.run(_run(args, settings))
        finally:
            tracing.shutdown()
        sys.stdout.flush()  # here, so a closed pipe is met below and not at exit
        return code
    except Refusal as err:
        print(f"mcp-tasks: {err}", file=sys.stderr)
        return err.code
    except (InvalidFilter, answers.InvalidAnswer, ValueError) as err:
        print(f"mcp-tasks: {err}", file=sys.stderr)
        return EXIT_INVALID
    except BackendUnavailable as err:
        print(f"mcp-tasks: {err}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except TaskError as err:
        print(f"mcp-tasks: {err}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        print("\nmcp-tasks: interrupted; nothing was sent", file=sys.stderr)
        return EXIT_REFUSED
    except BrokenPipeError:
        # The reader went away (`tasks list --json | head`): it has what it wanted. No
        # traceback, and nothing more written to the closed pipe, even at exit's flush.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


async def _client(settings: Settings) -> Client:
    try:
        return await asyncio.wait_for(connect(settings), CONNECT_TIMEOUT_S)
    except ClusterProblem as err:  # already "cannot reach Temporal at ...: why"
        where = f"namespace {settings.namespace}; MCP_TASKS_TEMPORAL_ADDRESS"
        raise Refusal(EXIT_UNREACHABLE, f"{err} ({where})") from None
    except (RuntimeError, OSError, TimeoutError) as err:
        raise Refusal(
            EXIT_UNREACHABLE,
            f"cannot reach Temporal at {settings.temporal_address} (namespace "
            f"{settings.namespace}; MCP_TASKS_TEMPORAL_ADDRESS): {err or 'timed out'}",
        ) from None


def _filter(args: argparse.Namespace, settings: Settings) -> TaskFilter:
    queue = None if args.all_queues else args.task_queue or settings.task_queue
    longer = args.waiting_longer_than
    before = None if longer is None else datetime.now(UTC) - longer
    return TaskFilter(args.status, args.tool, args.owner, args.approver, queue, before)


def _principal(subject: str, settings: Settings) -> int:
    """`tasks principal`: McpOwner, and the logged value under each state secret key."""
    digest = owner_digest(subject)
    print(f"McpOwner   {digest}")
    if settings.state_secret is None:
        print(
            "mcp-tasks: MCP_TASKS_STATE_SECRET is not set: a server without it logs "
            "principals under a random key",
            file=sys.stderr,
        )
        return 0
    for key in state_keys.parse(settings.state_secret):
        print(f"principal  {principal_tag(digest, principal_key(key))}")
    return 0


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    if args.tasks_command == "principal":
        return _principal(args.subject, settings)
    if args.tasks_command == "list":
        where = _filter(args, settings)
        where.query()  # a bad value is refused before Temporal is called
        found = await list_tasks(await _client(settings), where, args.limit)
        link = _link(settings)
        if args.json:
            for task in found:
                print(views.listed_json(task, link))
        elif found:
            print(views.table(found, link))
        else:
            print("no tasks", file=sys.stderr)
        return 0
    if args.tasks_command == "webhooks":
        return await _webhooks(args, settings)
    if args.tasks_command in ("subscriptions", "unsubscribe"):
        return await subscriptions_command(args, await _client(settings), settings.task_queue)
    client = await _client(settings)
    store = TemporalTaskStore(
        client, settings.task_queue, poll_interval_max_ms=settings.poll_interval_max_ms
    )
    snapshot = await store.get(args.task_id)
    if snapshot is None:
        raise Refusal(EXIT_REFUSED, f"no task {args.task_id} in namespace {client.namespace}")
    if args.tasks_command == "show":
        detail = await task_detail(client, args.task_id)
        if detail is None:
            raise Refusal(EXIT_REFUSED, f"no task {args.task_id} in namespace {client.namespace}")
        link = _link(settings)
        shown = views.shown_json if args.json else views.page
        print(shown(snapshot, detail, link))
        return 0
    if args.tasks_command == "cancel":
        return await _cancel(store, snapshot)
    return await _answer(args, settings, store, snapshot)


def _link(settings: Settings) -> views.Link:
    def link(task_id: str, run_id: str | None) -> str | None:
        return workflow_url(settings.temporal_ui_url, settings.namespace, task_id, run_id)

    return link


async def _webhooks(args: argparse.Namespace, settings: Settings) -> int:
    found = await pending_deliveries(await _client(settings), settings.task_queue)
    backlog = by_endpoint(found)
    for line in backlog:
        if args.json:
            print(json.dumps(dataclasses.asdict(line)))
        else:
            state = "suspended" if line.suspended else "active"
            print(
                f"{line.endpoint}\t{line.pending} pending\t{state}\t"
                f"{line.most_attempts} attempts\t{line.last_failure}"
            )
    if not backlog:
        print("no webhook delivery is waiting", file=sys.stderr)
    return 0


def _pick_key(snapshot: TaskSnapshot, key: str | None) -> str:
    task, waiting = snapshot.task_id, list(snapshot.input_requests)
    if snapshot.status in TERMINAL_STATUSES:
        raise Refusal(EXIT_REFUSED, f"task {task} is {snapshot.status}: nothing to answer")
    if not waiting:
        raise Refusal(EXIT_REFUSED, f"task {task} is {snapshot.status}, waiting for no input")
    listed = ", ".join(waiting)
    if key is None and len(waiting) > 1:
        raise Refusal(EXIT_REFUSED, f"task {task} waits for {listed}: choose one with --key")
    if key is not None and key not in snapshot.input_requests:
        raise Refusal(
            EXIT_REFUSED, f"task {task} has no outstanding request {key!r} (waiting: {listed})"
        )
    return key or waiting[0]


def _ask(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError:
        raise Refusal(EXIT_REFUSED, "no answer sent (end of input)") from None


def _response(args: argparse.Namespace, key: str, request: dict[str, Any]) -> dict[str, Any]:
    form = answers.form_of(request)
    given = bool(args.set) or args.content is not None
    action = args.action
    if form is None and request.get("method") != "elicitation/create":
        if args.content is None:
            raise answers.InvalidAnswer(
                f"request {key!r} is a {request.get('method')}: give the whole response with --json"
            )
        return answers.content_from_flags({}, [], args.content)
    interactive = not given and sys.stdin.isatty()
    if interactive:
        print("\n".join(views.request_lines(key, request)))
        while action is None:
            action = answers.action_of(_ask(answers.ACTION_PROMPT))
            if action is None:
                print("  type accept (or y) to answer, decline (or n) to refuse")
    if action == "decline":
        if given:
            raise answers.InvalidAnswer("--set and --json carry an accepted answer's content")
        return {"action": "decline"}
    if form is None:  # a URL elicitation: accepting it carries no content
        return {"action": "accept"}
    if interactive:
        return {"action": "accept", "content": answers.content_from_prompts(form, _ask, print)}
    return {"action": "accept", "content": answers.content_from_flags(form, args.set, args.content)}


async def _answer(
    args: argparse.Namespace, settings: Settings, store: TemporalTaskStore, snapshot: TaskSnapshot
) -> int:
    key = _pick_key(snapshot, args.key)
    request = snapshot.input_requests[key]
    response = answers.checked(key, request, _response(args, key, request))
    limits = Limits(
        settings.max_input_responses, settings.max_input_response_bytes, 0, PollLimiter(1, 1)
    )
    try:
        limits.check_input_responses({key: response})
    except McpError as err:
        raise answers.InvalidAnswer(f"invalid answer: {err.message}") from None
    update = SubmitInput(
        responses={key: response},
        request_id=f"operator-cli-{uuid.uuid4().hex}",
        principal=OPERATOR_DIGEST,
        by=f"operator:{_login()}",
    )
    # A span as the server's requests have (its trace reaches the workflow through the
    # client's tracing interceptor), and the audit line a tasks/update writes.
    with tracing.operator_span("tasks answer", snapshot.task_id):
        try:
            await store.submit_input(snapshot.task_id, update)
        except TaskError:
            _audit("task.update", snapshot.task_id, update, [key], "refused")
            raise
        _audit("task.update", snapshot.task_id, update, [key], "ok")
    after = await store.get(snapshot.task_id)
    now = f"; the task is {after.status}" if after is not None else ""
    print(f"answered {key!r} of {snapshot.task_id} ({response['action']}){now}")
    return 0


async def _cancel(store: TemporalTaskStore, snapshot: TaskSnapshot) -> int:
    task = snapshot.task_id
    if snapshot.status in TERMINAL_STATUSES:
        raise Refusal(EXIT_REFUSED, f"task {task} is {snapshot.status}: nothing to cancel")
    update = SubmitInput(
        responses={},
        request_id=f"operator-cli-{uuid.uuid4().hex}",
        principal=OPERATOR_DIGEST,
        by=f"operator:{_login()}",
    )
    # The span and the audit line a tasks/cancel has; the stamp in the history says who.
    with tracing.operator_span("tasks cancel", task):
        try:
            await store.cancel(task, AuditStamp(update.principal, update.request_id))
        except TaskError:
            _audit("task.cancel", task, update, [], "refused")
            raise
        _audit("task.cancel", task, update, [], "ok")
    print(f"cancellation of {task} requested: it ends cancelled once its workflow has stopped")
    return 0


def _audit(event: str, task_id: str, update: SubmitInput, keys: list[str], outcome: str) -> None:
    """An audit line like the server's (protocol/core/audit.py), on the same logger: the operator's
    side door is recorded where the front door's changes are."""
    entry = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "event": event,
        "method": "operator-cli",
        "requestId": update.request_id,
        "taskId": task_id,
        "principal": update.principal,
        "by": update.by,
        "keys": keys,
        "outcome": outcome,
    }
    AUDIT.info(json.dumps(entry, separators=(",", ":")))


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
