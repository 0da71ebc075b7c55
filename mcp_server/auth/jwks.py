"""The signing keys of a JWKS URL, by `kid`, for `--auth jwt`.

Rules implemented (what an attacker with random `kid` values must not achieve):
- A known `kid` is answered from memory and never waits: no lock, no thread, no fetch stands
  between a request and a key already fetched, whatever a refresh is doing.
- An unknown `kid` may refresh the set, and refreshes are single-flight (every request that
  needs one joins the one in flight) and at most one per `REFRESH_INTERVAL_S`: within that
  interval of the last refresh an unknown `kid` is refused at once (unknown signing key),
  or, if that refresh failed, answered "keys unavailable" at once. N random `kid`s cost the
  authorization server at most one fetch per interval.
- A fetch is async I/O with a time limit (`JWKS_TIMEOUT_S`), no redirects, a size cap, on the
  event loop: no thread pool to fill.
- A successful refresh replaces the set (a key the server withdrew is dropped); a failed one
  keeps what was known, so an outage does not fail tokens signed with a key already seen.
- A token without a `kid` never causes a fetch: it is an unknown key.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import jwt

JWKS_TIMEOUT_S = 5.0
REFRESH_INTERVAL_S = 10.0
MAX_JWKS_BYTES = 512 * 1024

log = logging.getLogger(__name__)


class UnknownSigningKey(Exception):
    """The set, as fetched at most `REFRESH_INTERVAL_S` ago, has no key of this `kid`."""


class KeysUnavailable(Exception):
    """The set could not be fetched (the authorization server is down, slow or answers
    something that is not a JWK Set)."""


Fetch = Callable[[], Awaitable[dict[str, Any]]]


def http_fetch(url: str) -> Fetch:
    """A fetch of the JWK Set document at `url` (raises KeysUnavailable)."""

    async def fetch() -> dict[str, Any]:
        try:
            async with (
                asyncio.timeout(JWKS_TIMEOUT_S),
                httpx.AsyncClient(timeout=JWKS_TIMEOUT_S, follow_redirects=False) as client,
                client.stream("GET", url, headers={"Accept": "application/json"}) as response,
            ):
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_JWKS_BYTES:
                        raise KeysUnavailable("the JWK Set is too large")
                if response.status_code != 200:
                    raise KeysUnavailable(f"HTTP {response.status_code}")
            document = json.loads(body)
        except (TimeoutError, httpx.HTTPError, ValueError) as err:
            raise KeysUnavailable(type(err).__name__) from None
        if not isinstance(document, dict):
            raise KeysUnavailable("not a JWK Set")
        return document

    return fetch


def signing_keys(document: dict[str, Any]) -> dict[str, Any]:
    """The verification keys of a JWK Set document by `kid` (keys for signatures, with a kid)."""
    try:
        key_set = jwt.PyJWKSet.from_dict(document)
    except jwt.PyJWKSetError as err:
        raise KeysUnavailable("no usable keys") from err
    keys = {
        key.key_id: key.key
        for key in key_set.keys
        if key.key_id and key.public_key_use in ("sig", None)
    }
    if not keys:
        raise KeysUnavailable("no signing keys")
    return keys


class JwksKeys:
    def __init__(
        self,
        fetch: Fetch,
        refresh_interval_s: float | None = None,  # None: REFRESH_INTERVAL_S
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._interval = refresh_interval_s
        self._clock = clock
        self._keys: dict[str, Any] = {}
        self._refresh: asyncio.Future[None] | None = None
        self._refreshed_at: float | None = None
        self._failed = False
        self.fetches = 0  # how many times the set was asked for (read by tests and metrics)

    async def key(self, kid: str | None) -> Any:
        """The key of `kid`; UnknownSigningKey or KeysUnavailable."""
        if kid is None:
            raise UnknownSigningKey
        known = self._keys.get(kid)
        if known is not None:
            return known  # never waits on a refresh
        await self._refreshed()
        known = self._keys.get(kid)
        if known is None:
            raise (KeysUnavailable if self._failed else UnknownSigningKey)()
        return known

    async def _refreshed(self) -> None:
        """Join the refresh in flight, start one if the interval allows, else return at once."""
        if self._refresh is None:
            interval = REFRESH_INTERVAL_S if self._interval is None else self._interval
            recent = self._refreshed_at is not None and (
                self._clock() - self._refreshed_at < interval
            )
            if recent:
                return
            self._refreshed_at = self._clock()
            self._refresh = asyncio.ensure_future(self._run_refresh())
        # shield: a request that goes away (client disconnect) does not cancel the refresh
        # the others wait on.
        await asyncio.shield(self._refresh)

    async def _run_refresh(self) -> None:
        self.fetches += 1
        try:
            self._keys = signing_keys(await self._fetch())
            self._failed = False
        except KeysUnavailable as err:
            log.warning("the JWK Set cannot be fetched: %s", err)
            self._failed = True
        except Exception:  # a document the JWK parser chokes on: unavailable, not a crash
            log.warning("the JWK Set cannot be used", exc_info=True)
            self._failed = True
        finally:
            self._refreshed_at = self._clock()  # the interval runs from the refresh's end
            self._refresh = None
