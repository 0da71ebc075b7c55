"""Event subscriptions end with the token that made them (docs/guides/events.md).

Rules implemented:
- In `tokens` mode the server re-reads the tokens file when it changes: on every request, and
  every `REREAD_S` seconds in between (a revoked token may send no request again). The tokens
  a re-read finds gone are signalled, by their SHA-256, to their principals' subscriptions
  workflows, which drop the subscriptions those tokens made (workflows/event_subscriptions.py).
- `mcp-tasks token revoke` only edits the file: the subscriptions end when a running server
  next reads it (within `REREAD_S`). A token revoked while no server runs leaves its
  subscriptions to their TTL.
- A JWT cannot be revoked here: a subscription never outlives its `exp` (handlers.py).
- A signal that fails (Temporal unreachable) is logged, one line, and not retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from mcp_server.auth.authenticators import AuthError, TokenAuthentication
from mcp_server.tasks.event_subscriptions import SubscriptionStore
from mcp_tasks.identity import Principal

log = logging.getLogger("mcp_server.auth.revocation")

REREAD_S = 2.0


class RevokedTokens:
    """Ends the subscriptions of the tokens a re-read of the file finds gone."""

    def __init__(self, tokens: TokenAuthentication, store: SubscriptionStore) -> None:
        self._tokens = tokens
        self._store = store
        self._pending: set[asyncio.Task[None]] = set()

    def revoked(self, gone: dict[str, Principal]) -> None:
        by_principal: dict[str, list[str]] = {}
        for digest, principal in gone.items():
            by_principal.setdefault(principal.digest, []).append(digest)
        for owner, credentials in by_principal.items():
            task = asyncio.get_running_loop().create_task(self._signal(owner, credentials))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _signal(self, principal: str, credentials: list[str]) -> None:
        try:
            await self._store.revoked(principal, sorted(credentials))
        except Exception as err:
            log.warning("could not end the subscriptions of revoked tokens: %s", err)

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(REREAD_S)
            with contextlib.suppress(AuthError):  # unreadable now: the next request says so
                self._tokens.reread()

    async def settled(self) -> None:
        """Until every signal sent so far is done (tests, and an orderly shutdown)."""
        while self._pending:
            await asyncio.gather(*list(self._pending))


@contextlib.asynccontextmanager
async def subscriptions_end_with_tokens(
    tokens: TokenAuthentication, store: SubscriptionStore
) -> AsyncIterator[RevokedTokens]:
    watcher = RevokedTokens(tokens, store)
    tokens.on_revoked = watcher.revoked
    loop = asyncio.create_task(watcher.watch())
    try:
        yield watcher
    finally:
        tokens.on_revoked = None
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
        await watcher.settled()
