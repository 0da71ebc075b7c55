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
from collections.abc import AsyncIterator, Callable

from mcp_server.protocol.core.context import RequestContext, Services
from mcp_server.protocol.core.relay import ask
from mcp_server.protocol.limits.listen import Lease
from mcp_server.tasks.access import find_task
from mcp_server.tasks.following import Updates

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
    relays = services.relays
    asked: dict[str, set[str]] = {}
    listed: list[str] = []
    seen: set[str] = set()
    try:
        async with services.listening.watchers.following(
            within_s=lifetime_s, tick_s=SESSION_IDLE_S
        ) as updates:
            listing = asyncio.create_task(
                _read_session_list(services, session, listed, updates.nudge)
            )
            relays.session_streams.add(updates.nudge)
            try:
                async for _ in updates:
                    if listing.done():
                        listing.result()  # the list could not be read (Temporal): the stream ends
                        return
                    await _follow_listed(ctx, services, updates, listed, seen)
                    # Checked at each round: a tasks/result call may be relaying a question now,
                    # or have just stopped (it nudges this stream) with the question still open.
                    for task_id, snapshot in updates.latest.items():
                        if snapshot.status == "input_required" and task_id not in relays.relaying:
                            sent = asked.setdefault(task_id, set())
                            relays.sent_on_session_stream[(session, task_id)] = sent
                            await ask(ctx, snapshot, sent)
                    yield None
            finally:
                relays.session_streams.discard(updates.nudge)
                listing.cancel()
    finally:
        lease.release()
        for task_id in asked:
            relays.sent_on_session_stream.pop((session, task_id), None)


async def _follow_listed(
    ctx: RequestContext,
    services: Services,
    updates: Updates,
    listed: list[str],
    seen: set[str],
) -> None:
    """Follow the tasks the session's list named since the last round (each read once, as
    tasks/get reads it for the caller); a terminal one is not followed."""
    new, listed[:] = [t for t in listed if t not in seen], []
    for task_id in new:
        seen.add(task_id)
        snapshot = await find_task(
            services.store, task_id, ctx.principal, services.clock, identity=ctx.identity
        )
        if snapshot is not None:
            updates.add(snapshot)


async def _read_session_list(
    services: Services, session: str, listed: list[str], nudge: Callable[[], None]
) -> None:
    """Follow the session's task list, adding each task it names to `listed`."""
    cursor = b""
    while True:
        task_ids, cursor = await services.store.session_tasks(session, cursor)
        if task_ids:
            listed.extend(task_ids)
            nudge()
