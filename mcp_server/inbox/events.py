"""`/inbox/events`: server-sent events that tell an open inbox page what changed, so its script
fetches the fresh fragment (no reload).

- The list page's stream re-lists the waiting tasks (one visibility query) every `RELIST_S`,
  which finds new ones, and at once when one of the listed tasks changes (it follows up to
  `MAX_FOLLOWED` of them with the replica's task watchers); it sends `list` with the list's
  version when that changed.
- A task page's stream follows the task with the replica's task watchers, the machinery of
  `subscriptions/listen` (one history long-poll per task however many pages follow it), and
  sends `task` with the versions of its live part and its forms; `end` once nothing more will
  come (terminal, gone).
- Each stream holds a `subscriptions/listen` slot of its principal (the same per-caller and
  per-replica limits, 429 beyond them); a list that cannot be read (Temporal down) is tried
  again the next round and a task stream counts against the watched-task
  limit. A stream lasts at most `MAX_STREAM_S` (the browser reconnects by itself) and sends a
  comment every `KEEPALIVE_S`; it ends as soon as the HTTP server begins to shut down (the
  app's `closing` event), and every exit (client gone, cancelled) releases its slot and its
  watcher.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from mcp_server.inbox.list_page import list_version
from mcp_server.inbox.pages import forms_version, task_version
from mcp_server.protocol.frame.errors import McpError
from mcp_server.protocol.limits.listen import Lease, Listening
from mcp_server.tasks.errors import TaskError
from mcp_server.tasks.following import Updates
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.waiting import Waiting

log = logging.getLogger("mcp_server.inbox.events")
RELIST_S = 3.0
KEEPALIVE_S = 15.0
MAX_STREAM_S = 300.0
RETRY_MS = 3000
MAX_FOLLOWED = 20


def event(name: str, data: dict[str, str]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _opening() -> bytes:
    return f"retry: {RETRY_MS}\n\n".encode()


def _follow_listed(listening: Listening, updates: Updates, waiting: list[Waiting]) -> None:
    """Follow the first `MAX_FOLLOWED` listed tasks, while the replica may watch more: any change
    of one gives the stream a round, which re-lists at once instead of at its next tick."""
    wanted = {w.task_id: w for w in waiting[:MAX_FOLLOWED]}
    for task_id in [t for t in updates.tasks if t not in wanted]:
        updates.drop(task_id)
    for task_id, listed in wanted.items():
        if task_id in updates.tasks:
            continue
        try:
            listening.check_room([task_id])
        except McpError:
            return  # the replica watches all it may: this stream re-lists on its ticks
        updates.add(listed.snapshot)  # what the list already shows


SIGNED_OUT = event("end", {"reason": "signed-out"})
KEEPALIVE = b": keepalive\n\n"


async def list_stream(
    lease: Lease,
    listening: Listening,
    relist: Callable[[], Awaitable[list[Waiting]]],
    closing: asyncio.Event,
    signed_in: Callable[[], bool],
) -> AsyncIterator[bytes]:
    try:
        yield _opening()
        shown: str | None = None
        async with listening.watchers.following(
            within_s=MAX_STREAM_S, tick_s=RELIST_S, quiet_s=KEEPALIVE_S, stop=closing
        ) as updates:
            async for news in updates:
                if not signed_in():  # revoked since the stream opened: it lists nothing more
                    yield SIGNED_OUT
                    return
                try:
                    waiting = await relist()
                except (TaskError, McpError) as err:  # Temporal unreachable: try again next round
                    log.warning("inbox list stream: %s", err)
                    continue
                _follow_listed(listening, updates, waiting)
                version = list_version(waiting)
                if version != shown:
                    shown = version
                    updates.spoke()
                    yield event("list", {"version": version})
                elif news.quiet:
                    yield KEEPALIVE
    finally:
        lease.release()


def _task_event(snapshot: TaskSnapshot) -> bytes:
    versions = {"version": task_version(snapshot), "forms": forms_version(snapshot)}
    return event("task", versions)


async def task_stream(
    lease: Lease,
    listening: Listening,
    snapshot: TaskSnapshot,
    closing: asyncio.Event,
    signed_in: Callable[[], bool],
) -> AsyncIterator[bytes]:
    task_id = snapshot.task_id
    try:
        yield _opening()
        # A round on each change, and every RELIST_S to see whether the session still stands.
        async with listening.watchers.following(
            [snapshot], within_s=MAX_STREAM_S, tick_s=RELIST_S, quiet_s=KEEPALIVE_S, stop=closing
        ) as updates:
            async for news in updates:
                if not signed_in():  # revoked since the stream opened: it shows nothing more
                    yield SIGNED_OUT
                    return
                latest = news.changed.get(task_id)
                if latest is not None:
                    updates.spoke()
                    yield _task_event(latest)
                if task_id not in updates.tasks:  # terminal, or gone
                    yield event("end", {"reason": news.ended.get(task_id, "terminal")})
                    return
                if news.quiet and latest is None:
                    yield KEEPALIVE
    finally:
        lease.release()
