"""The event loop every serving command runs on: uvloop where it is installed (a dependency of
this project off Windows), else asyncio's own. `MCP_TASKS_EVENT_LOOP` picks one: `auto`
(the default), `uvloop`, or `asyncio`.

Why: with uvloop, the `mcp-tasks dev` process spent a fifth to a third less CPU per
`tasks/get` (its `/proc` CPU time over 2,000 sequential reads, against the same run's raw
`describe()`; the machine's speed varied between runs). Workflow code is unaffected: the
Temporal worker runs each workflow on an event loop of its own, never on this one.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

T = TypeVar("T")
LoopChoice = Literal["auto", "uvloop", "asyncio"]


def loop_factory(choice: LoopChoice) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory of the chosen loop; None for asyncio's default."""
    if choice == "asyncio":
        return None
    if importlib.util.find_spec("uvloop") is None:
        if choice == "uvloop":
            raise ValueError("MCP_TASKS_EVENT_LOOP=uvloop, but uvloop is not installed")
        return None
    import uvloop

    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, T], choice: LoopChoice = "auto") -> T:
    """`asyncio.run(main)` on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
        return runner.run(main)
