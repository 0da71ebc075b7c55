"""How long the task layer waits for Temporal: one call, and one long-poll."""

from __future__ import annotations

from datetime import timedelta

RPC_TIMEOUT = timedelta(seconds=5)
# Longer than Temporal's own long-poll timeout (20 s), which then answers "nothing new".
LONG_POLL_TIMEOUT = timedelta(seconds=30)
