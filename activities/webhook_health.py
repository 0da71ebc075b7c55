"""Suspension of a webhook endpoint after sustained failure (SEP-3415's guidance: a failure
rate over a rolling window with a minimum sample, never a fixed count of failures).

Rules implemented:
- Each worker keeps, per endpoint, the outcomes of its attempts of the last `window_s`. An
  endpoint is suspended while that window holds at least `min_attempts` attempts of which at
  least `failure_rate` failed (any answer but a 2xx or a `410 Gone`, no connection, a time-out).
- While suspended, the worker POSTs nothing to it: each delivery due is retried later, by its
  workflow's durable retry (so nothing is lost), after the time it takes the oldest outcome to
  leave the window (at most `MAX_WAIT_S`). As outcomes age out the endpoint is tried again, and
  a success keeps it active; a sustained failure suspends it again.
- This is a circuit breaker, the worker's own judgement of an endpoint it calls: its state is
  soft (a restarted worker starts from an active endpoint and learns again). What must not be
  lost, the deliveries, is in Temporal.
- Operators see it as the gauge `mcp_tasks_webhook_endpoint_suspended{endpoint}` (1 while
  suspended) on the worker's metrics port, and a WARNING log line at each change.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("mcp_server.webhooks")

MAX_WAIT_S = 300.0


@dataclass(frozen=True)
class SuspensionPolicy:
    window_s: float = 3600.0
    min_attempts: int = 20
    failure_rate: float = 0.95


@dataclass
class _Window:
    outcomes: deque[tuple[float, bool]] = field(default_factory=deque)
    suspended: bool = False


class EndpointHealth:
    """The rolling outcomes of this worker's attempts, per endpoint id."""

    def __init__(
        self, policy: SuspensionPolicy, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._policy = policy
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def record(self, endpoint: str, succeeded: bool) -> None:
        window = self._windows.setdefault(endpoint, _Window())
        window.outcomes.append((self._clock(), succeeded))
        self._update(endpoint, window)

    def wait_s(self, endpoint: str) -> float | None:
        """None while the endpoint may be called; else how long to wait before trying again."""
        window = self._windows.get(endpoint)
        if window is None or not self._update(endpoint, window):
            return None
        oldest = window.outcomes[0][0]
        return max(1.0, min(MAX_WAIT_S, oldest + self._policy.window_s - self._clock()))

    def is_suspended(self, endpoint: str) -> bool:
        return self.wait_s(endpoint) is not None

    def _update(self, endpoint: str, window: _Window) -> bool:
        horizon = self._clock() - self._policy.window_s
        while window.outcomes and window.outcomes[0][0] < horizon:
            window.outcomes.popleft()
        attempts = len(window.outcomes)
        failed = sum(1 for _, succeeded in window.outcomes if not succeeded)
        suspended = (
            attempts >= self._policy.min_attempts and failed >= self._policy.failure_rate * attempts
        )
        if suspended != window.suspended:
            window.suspended = suspended
            if suspended:
                log.warning(
                    "webhook endpoint %r suspended: %d of its last %d attempts failed; "
                    "deliveries wait (durably) until it is tried again",
                    endpoint,
                    failed,
                    attempts,
                )
            else:
                log.warning("webhook endpoint %r is active again", endpoint)
        return suspended
