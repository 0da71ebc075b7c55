"""Steering, pausing and resuming a running task: the signals, and the relay to a team's child.

Rules implemented:
- The server signals the task workflow (the taskId's): `mcp.steer` carries one message, `mcp.pause`
  and `mcp.resume` who asked. Signals, not updates: they are durable with no worker alive, and the
  server only acks (the message is delivered at the task's next safe point, not when it is sent).
- Steer messages are numbered from 1 in the order the workflow takes them in (`seq`), which is the
  order Temporal recorded the signals: a tool reads them in that order.
- A paused task holds at its next safe point (`TaskWorkflow.safe_point()`); the memo says
  `paused: true` from then until it is resumed (a field written only when set).
- A task whose work runs in a team's workflow (an exposed workflow) relays each of the three to
  that child (`mcp.steer` `{"v": 1, "seq", "message", "from"?}`, `mcp.pause` / `mcp.resume`
  `{"v": 1}`: docs/reference/interactive-contract.md) in the order it received them, and shows
  `paused` when the child says so with `mcp.paused {"v": 1, "paused": bool}`.
Pure data and deterministic code: imported inside the workflow sandbox.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

# The names and payloads are the interactive contract's, defined once (the server signals the
# task workflow with the same names the task workflow relays to a team's child). Passed
# through: the contracts module loads pydantic, which the sandbox need not re-import.
with workflow.unsafe.imports_passed_through():
    from mcp_tasks.contracts.interactive import PAUSE_SIGNAL as PAUSE_SIGNAL
    from mcp_tasks.contracts.interactive import PAUSED_SIGNAL as PAUSED_SIGNAL
    from mcp_tasks.contracts.interactive import RESUME_SIGNAL as RESUME_SIGNAL
    from mcp_tasks.contracts.interactive import STEER_SIGNAL as STEER_SIGNAL
    from mcp_tasks.contracts.interactive import PauseInput, ResumeInput

    # The `mcp.steer` a team's workflow receives (SteerInput below is the one the server sends).
    from mcp_tasks.contracts.interactive import SteerInput as RelayedSteer
# The longest steer message the server accepts (characters): it is kept in the history and,
# for an exposed workflow, in the child's too.
MAX_STEER_CHARS = 4000


@dataclass
class SteerInput:
    """The payload of `mcp.steer` to a task workflow: one message, and who sent it."""

    message: str
    principal: str = ""
    request_id: str = ""
    # The display name of who steered ("" when not known).
    by: str = ""


def paused_report(payload: Any) -> bool | None:
    """The `paused` flag of a child's `mcp.paused` payload; None when it is not one (a
    receiver ignores what it does not understand, as the contract says)."""
    if isinstance(payload, dict) and isinstance(payload.get("paused"), bool):
        return bool(payload["paused"])
    return None


class ChildRelay:
    """What a task relays to the team's workflow that does its work: the steer messages, pauses
    and resumes, in the order the task received them. Signals sent before the child exists wait
    here and go as soon as it is started."""

    def __init__(self) -> None:
        self._child: workflow.ChildWorkflowHandle[Any, Any] | None = None
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._sending = False
        self._sender: asyncio.Task[None] | None = None

    def attach(self, child: workflow.ChildWorkflowHandle[Any, Any]) -> None:
        self._child = child
        self._flush()

    def send(self, signal: str, payload: RelayedSteer | PauseInput | ResumeInput) -> None:
        self._pending.append((signal, payload.wire()))
        self._flush()

    def _flush(self) -> None:
        if self._child is None or self._sending or not self._pending:
            return
        # One sender at a time: each signal is sent after the previous one was recorded, so
        # the child receives them in order.
        self._sending = True
        self._sender = asyncio.create_task(self._drain(self._child))

    async def _drain(self, child: workflow.ChildWorkflowHandle[Any, Any]) -> None:
        try:
            while self._pending:
                signal, payload = self._pending.pop(0)
                try:
                    await child.signal(signal, payload)
                except Exception:
                    workflow.logger.info("%s not delivered: the child has closed", signal)
        finally:
            self._sending = False
