"""pytest-timeout's "signal" method, with the stack of every pending asyncio task printed first.

On a timeout the plugin prints the stack of the main thread, which in an asyncio test is the
event loop waiting in select(): nothing about the coroutine that hangs. This hook (imported by
conftest.py) prints each pending task's own stack, then fails the test as the plugin does.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from types import FrameType
from typing import Any

import pytest
from pytest_timeout import timeout_sigalrm


def await_chain(awaitable: Any) -> list[str]:
    """Where a coroutine waits: its frame, then the frame of what it awaits, down to the last."""
    lines = []
    while awaitable is not None:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        if frame is not None:
            code = frame.f_code
            lines.append(f'  File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}')
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None)
    return lines


def pending_task_stacks() -> str:
    """Where each pending task of the loop running in this thread waits ("" if none runs)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return ""
    return "".join(
        "\n".join([f"{task.get_name()}:", *await_chain(task.get_coro())]) + "\n"
        for task in asyncio.all_tasks(loop)
    )


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None  # the plugin's own way

    def handler(signum: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True
        stacks = pending_task_stacks()
        if stacks:
            terminal = item.config.get_terminal_writer()
            terminal.sep("+", title="Timeout: pending asyncio tasks")
            terminal.write(stacks)
        timeout_sigalrm(item, settings)

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    item.cancel_timeout = cancel  # type: ignore[attr-defined]  # read by the plugin's cancel hook
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True
