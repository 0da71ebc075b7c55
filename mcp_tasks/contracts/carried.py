"""What a task's run hands the next when it continues as new (`TaskWorkflow.continue_as_new`).

It travels in `TaskInput.carried` as one JSON object. Runs in flight and recorded histories
carry it, and a worker of one version may start the run a worker of another version continued,
so:

Rules implemented:
- `Carried.wire()` and `Carried.read()` are the only code that knows its keys; the keys keep
  their meaning (`state`, `progress`, `cancelMessage`, `issuedKeys`, `answeredBy`,
  `webhooksSent`, `steering`, `historyBase`).
- `webhooksSent` and `steering` are written only when set: a task that never notified or was
  never steered carries exactly what it always did.
- A reader takes what it can and defaults the rest: an empty object is a task's first run, a
  missing or malformed key reads as its default.
Pure data: safe to import inside the workflow sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from mcp_tasks.contracts.task_state import SteerMessage, TaskState


class Progress(Protocol):
    """A tool's own progress, carried from run to run: any dataclass (its fields as JSON)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


@dataclass(frozen=True)
class CarriedSteering:
    """The steering of a task that was ever steered or paused."""

    # How many steer messages the task has taken in (the next one is numbered count + 1).
    count: int = 0
    paused: bool = False
    # The messages not yet handed over at a safe point, oldest first.
    queued: tuple[SteerMessage, ...] = ()

    def wire(self) -> dict[str, Any]:
        queued = [{"seq": m.seq, "message": m.message, "by": m.by} for m in self.queued]
        return {"count": self.count, "paused": self.paused, "queued": queued}

    @classmethod
    def read(cls, value: object) -> CarriedSteering | None:
        if not isinstance(value, dict):
            return None
        queued = tuple(
            SteerMessage(int(m["seq"]), str(m["message"]), str(m.get("by") or ""))
            for m in value.get("queued") or ()
            if isinstance(m, dict)
        )
        return cls(int(value.get("count") or 0), bool(value.get("paused")), queued)


@dataclass(frozen=True)
class Carried:
    """Everything of a task that outlives one of its runs."""

    # The task state tasks/get showed (None: not readable, the run starts from its input).
    state: TaskState | None = None
    # The tool's own progress, as it passed it to continue_as_new() (a dataclass as JSON).
    progress: dict[str, Any] = field(default_factory=dict)
    cancel_message: str = ""
    # Every input request key the task ever issued: keys stay unique for its whole life.
    issued_keys: tuple[str, ...] = ()
    # Input key -> digest of the principal whose tasks/update answered it.
    answered_by: dict[str, str] = field(default_factory=dict)
    # How many webhook notifications the task has sent.
    webhooks_sent: int = 0
    steering: CarriedSteering | None = None
    # How far the task's history had come, over all its runs (workflows/webhooks.py).
    history_base: int = 0

    def wire(self) -> dict[str, Any]:
        """The JSON object a continued run's `TaskInput.carried` holds."""
        return {
            "state": self.state.to_memo() if self.state is not None else None,
            "progress": self.progress,
            "cancelMessage": self.cancel_message,
            "issuedKeys": sorted(self.issued_keys),
            "answeredBy": self.answered_by,
            **({"webhooksSent": self.webhooks_sent} if self.webhooks_sent else {}),
            **({"steering": self.steering.wire()} if self.steering is not None else {}),
            "historyBase": self.history_base,
        }

    @classmethod
    def read(cls, value: object) -> Carried | None:
        """What a previous run carried; None in a task's first run (an empty object)."""
        if not isinstance(value, dict) or not value:
            return None
        progress, answered = value.get("progress"), value.get("answeredBy")
        return cls(
            state=TaskState.from_memo(value.get("state")),
            progress=dict(progress) if isinstance(progress, dict) else {},
            cancel_message=str(value.get("cancelMessage") or ""),
            issued_keys=tuple(str(key) for key in value.get("issuedKeys") or ()),
            answered_by=dict(answered) if isinstance(answered, dict) else {},
            webhooks_sent=int(value.get("webhooksSent") or 0),
            steering=CarriedSteering.read(value.get("steering")),
            history_base=int(value.get("historyBase") or 0),
        )
