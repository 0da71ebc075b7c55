"""Steering for a task whose work runs in a team's workflow (its child, on the team's worker).

The task workflow takes `mcp.steer`, `mcp.pause` and `mcp.resume` in as any task does, and
relays each to the child in the order it received them (workflows/steering.py, `ChildRelay`);
it shows `paused` only when the child says it holds (`mcp.paused {"v": 1, "paused": true}`),
because only the child knows where its safe points are. A task that never relays (no child
started yet) keeps the signals and sends them as soon as the child exists.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from mcp_tasks.contracts.task_state import SteerMessage
from workflows.steering import (
    PAUSE_SIGNAL,
    PAUSED_SIGNAL,
    RESUME_SIGNAL,
    STEER_SIGNAL,
    ChildRelay,
    paused_report,
)
from workflows.task_workflow import TaskWorkflow

with workflow.unsafe.imports_passed_through():  # pydantic models: loaded once, not per run
    from mcp_tasks.contracts.interactive import PauseInput, ResumeInput
    from mcp_tasks.contracts.interactive import SteerInput as RelayedSteer


class ChildSteering(TaskWorkflow):
    """A task workflow that relays steering to its child; call `relay_to(handle)` once the
    child is started."""

    def __init__(self) -> None:
        super().__init__()
        self._relay = ChildRelay()

    def relay_to(self, child: workflow.ChildWorkflowHandle[Any, Any]) -> None:
        self._relay.attach(child)

    def on_steer(self, message: SteerMessage) -> None:
        steer = RelayedSteer(seq=message.seq, message=message.message, sender=message.by or None)
        self._relay.send(STEER_SIGNAL, steer)

    def on_pause(self, paused: bool) -> None:
        if paused:
            self._relay.send(PAUSE_SIGNAL, PauseInput())
        else:
            self._relay.send(RESUME_SIGNAL, ResumeInput())

    @workflow.signal(name=PAUSED_SIGNAL)
    def child_paused(self, payload: Any) -> None:
        paused = paused_report(payload)
        if paused is not None:
            self.show_paused(paused)
