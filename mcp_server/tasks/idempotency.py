"""Idempotent task creation: the taskId of a call that carries an idempotency key.

Built on Temporal's workflow-ID policies, with no table of our own (starts.py, `create`):
- The taskId is derived from (principal digest, key) alone, so a retry names the same
  workflow ID. It is a digest, the same shape as a random taskId: neither the key nor the
  principal can be read from it.
- The task's memo keeps a digest of (principal, key, tool, arguments) (`call_digest`); a retry
  whose digest differs is `IdempotencyConflict`. The key salts that digest, so the memo tells
  nothing about the arguments to someone who does not know the key.
- The key lives as long as its task is readable (its TTL, plus the grace of a task that closed
  late: ttl.py). Once the task has expired, the next call with the key deletes it (expiry.py)
  and starts a new one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mcp_server.tasks.errors import TaskError

MAX_KEY_LENGTH = 200


class IdempotencyConflict(TaskError):
    """The key already names a task of another tool or other arguments."""

    def __init__(self, task_id: str) -> None:
        super().__init__(
            "this Idempotency-Key was already used for a call with another tool or other "
            f"arguments (task {task_id}); use a new key for a different call"
        )
        self.task_id = task_id


def key_problem(key: str) -> str | None:
    """What is wrong with `key` as an idempotency key, or None: 1 to 200 printable ASCII
    characters (space to tilde)."""
    if not 1 <= len(key) <= MAX_KEY_LENGTH:
        return f"must be 1 to {MAX_KEY_LENGTH} characters long, not {len(key)}"
    if not all(" " <= char <= "~" for char in key):
        return "must hold printable ASCII characters only (space to tilde)"
    return None


def _digest(domain: str, *parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{domain}:{text}".encode()).hexdigest()


def keyed_task_id(principal: str, key: str) -> str:
    """The taskId of `principal`'s (a digest) call with idempotency key `key`."""
    return f"mcp-task-{_digest('mcp-idempotency-task', principal, key)[:32]}"


def call_digest(principal: str, key: str, tool: str, arguments: dict[str, Any]) -> str:
    """What a retry with `key` must repeat: the tool and its arguments (key order aside)."""
    return _digest("mcp-idempotency-call", principal, key, tool, arguments)
