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
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from mcp_server.inbox.list_page import list_version
from mcp_server.inbox.pages import forms_version, task_version
from mcp_server.protocol.frame.errors import McpError
from mcp_server.protocol.limits.listen import Lease, Listening
from mcp_server.tasks.errors import TaskError
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.waiting import Waiting
from mcp_server.tasks.watchers import Follower

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


async def _until(events: list[asyncio.Event], within_s: float) -> None:
    """Return once any of `events` is set, or after `within_s` seconds."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, timeout=within_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


class _Followed:
    """The listed tasks a list stream follows with the replica's task watchers (at most
    `MAX_FOLLOWED`, and only while the replica may watch more): any change wakes the stream,
    which then re-lists at once instead of at its next round."""

    def __init__(self, listening: Listening, wake: asyncio.Event) -> None:
        self.listening = listening
        self.wake = wake
        self.followers: dict[str, Follower] = {}

    def update(self, waiting: list[Waiting]) -> None:
        wanted = {w.task_id: w for w in waiting[:MAX_FOLLOWED]}
        for task_id in [t for t, f in self.followers.items() if t not in wanted or f.done]:
            self.followers.pop(task_id).leave()
        for task_id, listed in wanted.items():
            if task_id in self.followers:
                continue
            try:
                self.listening.check_room([task_id])
            except McpError:
                return  # the replica watches all it may: this stream re-lists on its rounds
            follower = self.listening.watchers.follow(listed.snapshot, self.wake)
            follower.take()  # what the list already shows
            self.followers[task_id] = follower

    def drain(self) -> None:
        for follower in self.followers.values():
            follower.take()

    def close(self) -> None:
        for follower in self.followers.values():
            follower.leave()
        self.followers.clear()


SIGNED_OUT = event("end", {"reason": "signed-out"})


async def list_stream(
    lease: Lease,
    listening: Listening,
    relist: Callable[[], Awaitable[list[Waiting]]],
    closing: asyncio.Event,
    signed_in: Callable[[], bool],
) -> AsyncIterator[bytes]:
    wake = asyncio.Event()
    followed = _Followed(listening, wake)
    try:
        yield _opening()
        shown: str | None = None
        quiet_since = time.monotonic()
        ends = time.monotonic() + MAX_STREAM_S
        while time.monotonic() < ends and not closing.is_set():
            if not signed_in():  # revoked since the stream opened: it lists nothing more
                yield SIGNED_OUT
                return
            try:
                waiting = await relist()
            except (TaskError, McpError) as err:  # Temporal unreachable: try again next round
                log.warning("inbox list stream: %s", err)
                await _until([closing], RELIST_S)
                continue
            followed.update(waiting)
            version = list_version(waiting)
            if version != shown:
                shown, quiet_since = version, time.monotonic()
                yield event("list", {"version": version})
            elif time.monotonic() - quiet_since >= KEEPALIVE_S:
                quiet_since = time.monotonic()
                yield b": keepalive\n\n"
            await _until([closing, wake], RELIST_S)
            wake.clear()
            followed.drain()
    finally:
        followed.close()
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
    wake = asyncio.Event()
    follower = listening.watchers.follow(snapshot, wake)
    try:
        yield _opening()
        ends = time.monotonic() + MAX_STREAM_S
        quiet_since = time.monotonic()
        while True:
            if not signed_in():  # revoked since the stream opened: it shows nothing more
                yield SIGNED_OUT
                return
            latest = follower.take()
            if latest is not None:
                quiet_since = time.monotonic()
                yield _task_event(latest)
            if follower.done:
                yield event("end", {"reason": follower.ended or "terminal"})
                return
            left = ends - time.monotonic()
            if left <= 0 or closing.is_set():
                return
            # Woken by a change, or every RELIST_S to see whether the session still stands.
            await _until([wake, closing], min(RELIST_S, left))
            if time.monotonic() - quiet_since >= KEEPALIVE_S and not wake.is_set():
                quiet_since = time.monotonic()
                yield b": keepalive\n\n"
            wake.clear()
    finally:
        follower.leave()
        lease.release()
