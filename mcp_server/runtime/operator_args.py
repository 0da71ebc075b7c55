"""The arguments of `mcp-tasks tasks list|show|answer` (run by operator_cli.py)."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

from mcp_tasks.contracts.task_status import TASK_STATUSES

_SIDE_DOOR = (
    "The operator reads and answers through Temporal directly: the MCP server's checks (owner, "
    "approvers) do not apply; the answer is validated as tasks/update validates it."
)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value: str) -> timedelta:
    """`90s`, `30m`, `2h`, `3d` (a number and a unit) as a timedelta."""
    number, unit = value[:-1], value[-1:]
    if unit not in _UNITS or not number.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a duration such as 30m, 2h or 3d")
    return timedelta(seconds=int(number) * _UNITS[unit])


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def add_parser(commands: Any) -> None:
    """`mcp-tasks tasks ...` on the CLI's subcommands."""
    tasks = commands.add_parser(
        "tasks",
        help="operators: list, show and answer tasks (reads Temporal directly)",
        description=f"Operators find, read and answer tasks from Temporal. {_SIDE_DOOR}",
    )
    sub = tasks.add_subparsers(dest="tasks_command", required=True)
    listing = sub.add_parser(
        "list",
        help="tasks from Temporal's visibility store, newest first",
        description="MCP tasks of this deployment's task queue (MCP_TASKS_TASK_QUEUE) from "
        "Temporal's visibility store (McpStatus, McpTool, McpOwner, McpApprovers, "
        "McpWaitingSince), newest first; WAITING is how long a task has waited for input. "
        "--limit counts in Temporal's order: open tasks first, then the most recently closed.",
    )
    listing.add_argument("--status", choices=TASK_STATUSES, help="only tasks in this status")
    listing.add_argument("--tool", help="a tool name, e.g. request_approval")
    listing.add_argument(
        "--owner",
        metavar="PRINCIPAL",
        help="who created them: a subject (alice, a token's principal, a JWT "
        "sub), hashed as the server hashes it, or its 32-hex digest",
    )
    listing.add_argument(
        "--approver",
        metavar="PRINCIPAL",
        help="whose decision they await: a subject, a digest, or scope:<name>",
    )
    listing.add_argument(
        "--waiting-longer-than",
        type=duration,
        metavar="DURATION",
        help="only tasks waiting for input longer than this (30m, 2h, 3d), longest wait first",
    )
    queues = listing.add_mutually_exclusive_group()
    queues.add_argument(
        "--task-queue",
        metavar="QUEUE",
        help="another task queue's tasks (default: MCP_TASKS_TASK_QUEUE's)",
    )
    queues.add_argument(
        "--all-queues", action="store_true", help="the tasks of every task queue of the namespace"
    )
    listing.add_argument("--limit", type=_positive, default=50, help="at most this many (50)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    principal = sub.add_parser(
        "principal",
        help="a principal's McpOwner digest and the value the logs show for it",
        description="What Temporal (McpOwner) and the logs (`principal`, keyed by each key of "
        "MCP_TASKS_STATE_SECRET, newest first) hold for a principal; asks Temporal nothing.",
    )
    principal.add_argument("subject", metavar="PRINCIPAL", help="a subject, or its 32-hex digest")
    hooks = sub.add_parser(
        "webhooks",
        help="webhook deliveries still retrying, by endpoint (suspended or not)",
        description="The webhook deliveries of this task queue that have not succeeded yet, "
        "one line per endpoint: how many wait, whether a worker suspended the endpoint after "
        "sustained failure, the most attempts one has made and its last failure.",
    )
    hooks.add_argument("--json", action="store_true", help="one JSON object per endpoint")
    subscriptions = sub.add_parser(
        "subscriptions", help="a principal's event subscriptions, one line each"
    )
    subscriptions.add_argument(
        "principal", metavar="PRINCIPAL", help="a subject, or its 32-hex digest"
    )
    unsubscribe = sub.add_parser(
        "unsubscribe", help="end one of a principal's event subscriptions (exit 1: no such one)"
    )
    unsubscribe.add_argument(
        "principal", metavar="PRINCIPAL", help="a subject, or its 32-hex digest"
    )
    unsubscribe.add_argument("subscription_id", metavar="ID", help="sub_..., as listed")
    show = sub.add_parser("show", help="one task as tasks/get shows it, plus Temporal's detail")
    show.add_argument("task_id", metavar="ID", help="the taskId (mcp-task-...)")
    show.add_argument(
        "--json", action="store_true", help='{"task": <the tasks/get result>, "operator": {...}}'
    )
    answer = sub.add_parser(
        "answer",
        help="answer a task's outstanding input request",
        description=_SIDE_DOOR
        + " On a terminal, without --set or --json, each field of the form is asked for.",
    )
    answer.add_argument("task_id", metavar="ID", help="the taskId (mcp-task-...)")
    answer.add_argument("--key", help="which request (needed when several wait)")
    action = answer.add_mutually_exclusive_group()
    action.add_argument(
        "--accept",
        dest="action",
        action="store_const",
        const="accept",
        help="accept, with the form's content (the default)",
    )
    action.add_argument(
        "--decline",
        dest="action",
        action="store_const",
        const="decline",
        help="decline: the tool is told no, with no content",
    )
    answer.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="one field of the form, read as its type says (repeat it)",
    )
    answer.add_argument(
        "--json",
        dest="content",
        metavar="CONTENT",
        help="the form's content as a JSON object (for a request that is not a "
        "form: the whole response)",
    )
    cancel = sub.add_parser(
        "cancel",
        help="cancel a task, as tasks/cancel does",
        description="The operator cancels through Temporal directly: the MCP server's owner check "
        "does not apply. The task ends cancelled once its workflow has stopped (a tool may undo "
        "its work first); an ended task is refused.",
    )
    cancel.add_argument("task_id", metavar="ID", help="the taskId (mcp-task-...)")
