"""What the calls of this process that relay tasks' questions share, held in its Services
(`Services.relays`), never in module globals: a 2025-11-25 session's GET stream
(v2025/session_stream.py) and its tasks/result or attached calls (core/relay.py) must not ask
a client the same question twice, and a refused answer (core/refused_answers.py) must wake
the call that asked it. At the protocol's root, beside context.py, which holds it: every layer
of the protocol reaches it through the Services.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

# Wakes a follow (tasks/following.py: `Updates.nudge`).
Nudge = Callable[[], None]


class RefusedAnswers:
    """Refused answers of this process, held in its Services (`Services.relays.refused`)."""

    def __init__(self) -> None:
        # Refusals not yet taken by a call, per task: {key: what was wrong}. Only tasks a
        # relaying call of this process watches are kept, so nothing accumulates for tasks
        # nobody re-asks.
        self._pending: dict[str, dict[str, str]] = {}
        # The calls relaying each task's questions: how to wake each.
        self._watched: dict[str, list[Nudge]] = {}

    def watch(self, task_id: str, wake: Nudge) -> None:
        """A call of this process relays `task_id`'s questions from now on; a refusal calls
        `wake`."""
        self._watched.setdefault(task_id, []).append(wake)

    def unwatch(self, task_id: str, wake: Nudge) -> None:
        """That call ended: forget the task's refusals once no call watches it."""
        wakes = self._watched.get(task_id, [])
        if wake in wakes:
            wakes.remove(wake)
        if not wakes:
            self._watched.pop(task_id, None)
            self._pending.pop(task_id, None)

    def record(self, task_id: str, key: str, problem: str) -> None:
        """The answer to `key` of `task_id` was refused because of `problem` (kept only while
        an attached call of this process watches the task, which is woken)."""
        if task_id in self._watched:
            self._pending.setdefault(task_id, {})[key] = problem
            for wake in self._watched[task_id]:
                wake()

    def take(self, task_id: str) -> dict[str, str]:
        """The refusals recorded for `task_id` since the last look, by key (then forgotten)."""
        return self._pending.pop(task_id, {})


@dataclass
class Relays:
    # Tasks whose questions a call of this process is relaying right now (tasks/result,
    # attached), with how many calls relay each.
    relaying: Counter[str] = field(default_factory=Counter)
    # The questions each session's GET stream of this process has sent, per (session, taskId):
    # a tasks/result call of that session that starts later does not send them again.
    sent_on_session_stream: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    # How to wake this process's session GET streams: called when a relaying call stops, since
    # a question it left open is theirs again.
    session_streams: set[Nudge] = field(default_factory=set)
    # Answers a task refused, for the call that asked them (core/refused_answers.py).
    refused: RefusedAnswers = field(default_factory=RefusedAnswers)
