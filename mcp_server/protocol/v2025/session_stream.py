"""The standalone GET stream of a 2025-11-25 session: the questions of the tasks the session
created with `task`, for clients that poll `tasks/get` and never call `tasks/result` while
input is needed.

Rules implemented:
- The stream takes one of the caller's stream slots first: the same per-caller and
  per-replica limits as subscriptions/listen (limits/listen.py, one pool); a full pool is
  QUOTA_EXCEEDED (HTTP 429, Retry-After) before the stream opens.
- The session's tasks come from its task list in Temporal (tasks/session_tasks.py, one
  `McpSessionTasks` workflow per session: a history long-poll), so a task the session creates
  through any replica reaches a stream on any replica; each is followed through the replica's
  watcher of it (tasks/watchers.py), so a quiet session costs no read.
- A question a call of this process already relays (tasks/result, an attached run,
  core/relay.py) is left to it, so a client is not asked twice; when that call stops with the
  question still open, the stream is woken and asks it.
- The stream ends after `SESSION_STREAM_S` (the client opens it again), or when its task list
  cannot be read (Temporal failed).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.relay import ask
from mcp_server.protocol.limits.listen import Lease
from mcp_server.tasks.access import find_task
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.watchers import Follower

# The stream yields at least this often when nothing changes (for the transport's keep-alive),
# and ends after SESSION_STREAM_S (the client opens it again).
SESSION_IDLE_S = 5.0
SESSION_STREAM_S = 1800.0


def session_questions(
    ctx: RequestContext, services: Services, *, lifetime_s: float = SESSION_STREAM_S
) -> AsyncIterator[None]:
    """The session's GET stream (below), after taking one of the caller's stream slots: the
    same per-caller and per-replica limits as subscriptions/listen (limits/listen.py, one pool).
    A full pool raises QUOTA_EXCEEDED (HTTP 429, Retry-After) here, before the stream opens;
    the slot is freed when the stream ends or is dropped."""
    lease = services.listening.slots.acquire(ctx.principal)
    return _session_questions(ctx, services, lease, lifetime_s)


async def _session_questions(
    ctx: RequestContext, services: Services, lease: Lease, lifetime_s: float
) -> AsyncIterator[None]:
    """The standalone GET stream of a 2025-11-25 session: the questions of the tasks this
    session created with `task`, for clients that poll `tasks/get` and never call
    `tasks/result` while input is needed. The session's tasks come from its task list in
    Temporal (tasks/session_tasks.py: one history long-poll, whichever replica created them),
    each followed through the replica's watcher of it, so a quiet session costs no read. A
    question a call of this process already relays (tasks/result, an attached run) is left
    to it, so a client is not asked twice. Yields None after each change, and at least every
    `SESSION_IDLE_S` (the transport sends a keep-alive when nothing else went out); the
    questions themselves go out through `ctx.send`."""
    assert ctx.session is not None
    session = ctx.session
    wake = asyncio.Event()
    listed: list[str] = []
    listing = asyncio.create_task(_read_session_list(services, session, listed, wake))
    following: dict[str, Follower] = {}
    latest: dict[str, TaskSnapshot] = {}  # the tasks waiting for input, as last read
    seen: set[str] = set()
    relays = services.relays
    relays.session_streams.add(wake)
    asked: dict[str, set[str]] = {}
    deadline = time.monotonic() + lifetime_s
    try:
        while time.monotonic() < deadline and not listing.done():
            new, listed[:] = [t for t in listed if t not in seen], []
            for task_id in new:
                seen.add(task_id)
                snapshot = await find_task(
                    services.store, task_id, ctx.principal, services.clock, identity=ctx.identity
                )
                if snapshot is not None:
                    following[task_id] = services.listening.watchers.follow(snapshot, wake)
            for task_id, follower in list(following.items()):
                snapshot = follower.take() or latest.get(task_id)
                # Checked at each wake: a tasks/result call may be relaying it now, or have
                # just stopped (it wakes this stream) with the question still open.
                if snapshot is not None and snapshot.status == "input_required":
                    latest[task_id] = snapshot
                    if task_id not in relays.relaying:
                        sent = asked.setdefault(task_id, set())
                        relays.sent_on_session_stream[(session, task_id)] = sent
                        await ask(ctx, snapshot, sent)
                else:
                    latest.pop(task_id, None)
                if follower.done:  # terminal, gone, or unreadable: nothing more to ask
                    following.pop(task_id).leave()
                    latest.pop(task_id, None)
            yield None
            remaining = min(SESSION_IDLE_S, deadline - time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), max(0.0, remaining))
            wake.clear()
        if listing.done():
            listing.result()  # the list could not be read (Temporal): the stream ends
    finally:
        relays.session_streams.discard(wake)
        listing.cancel()
        lease.release()
        for follower in following.values():
            follower.leave()
        for task_id in asked:
            relays.sent_on_session_stream.pop((session, task_id), None)


async def _read_session_list(
    services: Services, session: str, listed: list[str], wake: asyncio.Event
) -> None:
    """Follow the session's task list, adding each task it names to `listed`."""
    cursor = b""
    while True:
        task_ids, cursor = await services.store.session_tasks(session, cursor)
        if task_ids:
            listed.extend(task_ids)
            wake.set()
