"""What `subscriptions/listen` may hold open in this replica, each limit a clear error.

Rules implemented:
- Open streams: at most `per_principal` per caller and `overall` in this replica. A listen
  beyond either is QUOTA_EXCEEDED (-31001), HTTP 429, `Retry-After`, before anything is read:
  an open stream is held, like an open task, not spent like a request. The same slots hold a
  2025-11-25 session's `GET /mcp` stream (session_stream.py) and an inbox live page:
  one pool, so no kind of stream is a way around the others' limits.
- A stream's slot is freed when its messages end, or when the stream is dropped before its
  first message (a client gone before the response started).
- Task ids per stream: at most `max_task_ids` (-32602, like any oversized parameter).
- Watched tasks: at most `max_watched_tasks` watchers in this replica (each holds one
  long-poll on Temporal's frontend, which caps concurrent long-polls per namespace); a listen
  that would start more is QUOTA_EXCEEDED, HTTP 429.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from mcp_server.protocol.frame.errors import QUOTA_EXCEEDED, McpError
from mcp_server.tasks.watchers import TaskWatchers

RETRY_AFTER_S = 5


def _refused(message: str, data: dict[str, int]) -> McpError:
    return McpError(
        QUOTA_EXCEEDED,
        message,
        data,
        http_status=429,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


class Lease:
    """One open stream's slot; `release` is idempotent, and dropping the lease releases it."""

    def __init__(self, slots: StreamSlots, principal: str) -> None:
        self._finalizer = weakref.finalize(self, slots.release, principal)

    def release(self) -> None:
        self._finalizer()


class StreamSlots:
    def __init__(self, per_principal: int, overall: int) -> None:
        self.per_principal = per_principal
        self.overall = overall
        self._open: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return self._open.total()

    def open_for(self, principal: str) -> int:
        return self._open[principal]

    def acquire(self, principal: str) -> Lease:
        mine = self._open[principal]
        if mine >= self.per_principal:
            raise _refused(
                f"you have {mine} subscriptions/listen streams open (GET /mcp session streams "
                "and live inbox pages count alike), the most this server allows per caller is "
                f"{self.per_principal}; close one, or listen to several tasks on one stream",
                {"openStreams": mine, "limit": self.per_principal},
            )
        if self.total >= self.overall:
            raise _refused(
                f"this server has {self.total} subscriptions/listen and session streams open, "
                "its limit; "
                f"retry in {RETRY_AFTER_S} s or poll tasks/get",
                {"openStreams": self.total, "limit": self.overall},
            )
        self._open[principal] += 1
        return Lease(self, principal)

    def release(self, principal: str) -> None:
        self._open[principal] -= 1
        if self._open[principal] <= 0:
            del self._open[principal]


@dataclass(frozen=True)
class Listening:
    """Everything `subscriptions/listen` shares in one replica."""

    slots: StreamSlots
    watchers: TaskWatchers
    max_task_ids: int
    max_watched_tasks: int

    def check_room(self, task_ids: Iterable[str]) -> None:
        """Refuse a stream that would start more watchers than this replica allows."""
        new = sum(1 for task_id in set(task_ids) if not self.watchers.watching(task_id))
        if new and len(self.watchers) + new > self.max_watched_tasks:
            raise _refused(
                f"this server already watches {len(self.watchers)} tasks for listen streams "
                f"and may watch at most {self.max_watched_tasks}; retry in {RETRY_AFTER_S} s "
                "or poll tasks/get",
                {"watchedTasks": len(self.watchers), "limit": self.max_watched_tasks},
            )
