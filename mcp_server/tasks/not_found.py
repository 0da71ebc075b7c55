"""The common deadline of every "not found" answer (the rules are in access.py): a floor, or the
usual time of reading a running task when that is longer, learnt by the store that reads them.
A store makes one with itself, so the learnt time lives exactly as long as the store (made
once, in the app's lifespan) and no module holds it."""

from __future__ import annotations

NOT_FOUND_FLOOR_S = 0.005


class NotFoundDeadline:
    """When a "not found" may be answered, learnt from how long reading a task takes."""

    def __init__(self, floor_s: float = NOT_FOUND_FLOOR_S) -> None:
        self.floor_s = floor_s
        self._usual_s = 0.0

    def after(self, started: float) -> float:
        """The deadline of a lookup that began at `started` (`time.perf_counter()`)."""
        return started + max(self.floor_s, self._usual_s)

    def learn(self, elapsed_s: float) -> None:
        self._usual_s += (elapsed_s - self._usual_s) / 16  # a moving average
