"""A heartbeating step: the unit of work of the demo's multi-step job.

It resumes from its last heartbeat after a worker crash, and a cancellation request reaches it
at its next heartbeat (within `HEARTBEAT_EVERY_S`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from temporalio import activity

HEARTBEAT_EVERY_S = 0.5


@dataclass
class StepInput:
    index: int
    total: int
    seconds: float
    label: str


@activity.defn(name="mcp_tasks.run_step")
async def run_step(step: StepInput) -> dict[str, Any]:
    details = activity.info().heartbeat_details
    done = float(details[0]) if details else 0.0
    started = time.monotonic()
    while done < step.seconds:
        await asyncio.sleep(min(HEARTBEAT_EVERY_S, step.seconds - done))
        done = min(step.seconds, done + HEARTBEAT_EVERY_S)
        # A heartbeat is also where a cancellation request is delivered (as CancelledError).
        activity.heartbeat(done)
    return {
        "step": step.index,
        "label": step.label,
        "seconds": step.seconds,
        "attempt": activity.info().attempt,
        "ranForSeconds": round(time.monotonic() - started, 3),
    }


ACTIVITIES = [run_step]
