"""A task as one request's client may see it: only what that client declared it can take.

Rules implemented (wire §1.6, §2.5; docs/concepts/state-machine.md "Questions nobody in the call
can answer", docs/guides/steering.md):
- The server must not show an input request whose capability the client did not declare (no
  `elicitation/create` without `elicitation`, in the mode it needs). A task's question does not
  fail for that: the task waits for someone who can answer (its approvers, the approval inbox,
  `mcp-tasks tasks answer`, another client of its owner's). `inputRequests` lists the requests
  this client can take; when it can take none, the task shows `working` to it (it is not waiting
  for this client), with a statusMessage that says where the question is answered.
- `paused` is shown only to a request that declared the steering extension; any other sees the
  status underneath (`working` or `input_required`).
Per request at 2026-07-28 (capabilities are the request's own); at 2025-11-25 those of the
session's `initialize`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mcp_server.protocol.core import capabilities
from mcp_server.protocol.core.capabilities import Declared
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_tasks.contracts.task_status import OPEN_STATUSES

STEERING_EXTENSION = "mcp-tasks-temporal/steering"
STEERING_CAPABILITY: dict[str, Any] = {"extensions": {STEERING_EXTENSION: {}}}
ANSWERED_ELSEWHERE = (
    "waiting for an answer this client cannot give (it did not declare the capability the "
    "question needs): the approval inbox, `mcp-tasks tasks answer {task_id}` or a client that "
    "declares it can answer"
)


def can_take(declared: Declared, request: dict[str, Any]) -> bool:
    """Whether a client that declared `declared` can take the input request `request`."""
    try:
        needed = capabilities.required_for_input(request)
    except ValueError:
        return False
    return not capabilities.missing(declared, needed)


def declares_steering(declared: Declared) -> bool:
    return not capabilities.missing(declared, STEERING_CAPABILITY)


def as_seen_by(snapshot: TaskSnapshot, declared: Declared) -> TaskSnapshot:
    """`snapshot` with only the input requests `declared` covers, and `paused` when declared."""
    seen = snapshot
    if snapshot.status == "input_required" and snapshot.input_requests:
        takes = {k: r for k, r in snapshot.input_requests.items() if can_take(declared, r)}
        if not takes:
            where = ANSWERED_ELSEWHERE.format(task_id=snapshot.task_id)
            message = f"{snapshot.status_message}; {where}" if snapshot.status_message else where
            seen = replace(seen, status="working", status_message=message, input_requests={})
        elif len(takes) < len(snapshot.input_requests):
            seen = replace(seen, input_requests=takes)
    return seen


def is_paused_for(snapshot: TaskSnapshot, declared: Declared) -> bool:
    """Whether this client is shown `paused`: the task holds, and the client declared it."""
    return snapshot.paused and snapshot.status in OPEN_STATUSES and declares_steering(declared)
