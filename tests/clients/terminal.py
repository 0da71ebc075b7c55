"""A terminal program driven as a person would: in tmux, keys sent with `send-keys`, the screen
read with `capture-pane`.

Each `Terminal` is a tmux server of its own (`tmux -S <socket>` in the test's directory, no
user configuration), so closing it ends exactly the server it started and what runs in it,
and no socket is left behind. Every wait is bounded and an
assertion that fails shows the screen. Calls go through asyncio subprocesses: the server under
test answers from the same event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

WIDTH, HEIGHT = 120, 40
# The pane stays after its program exits, so a crash leaves its last screen to read; focus
# events on, as a terminal emulator sends them (Claude Code asks for them).
TMUX_CONF = "set -g remain-on-exit on\nset -g focus-events on\n"


class Terminal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.socket = directory / "tmux.sock"
        self.env: dict[str, str] | None = None  # tmux's, then its window's
        self.pane_pid: int | None = None

    async def tmux(self, *args: str, check: bool = True) -> str:
        process = await asyncio.create_subprocess_exec(
            "tmux",
            "-S",
            str(self.socket),
            "-f",
            str(self.directory / "tmux.conf"),
            *args,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 15)
        if check and process.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)}: exit {process.returncode}: {err!r}")
        return out.decode()

    async def start(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        """`command` in a WIDTH x HEIGHT window, in the environment `env` (the tmux server
        started here takes it as its own, and the window gets it)."""
        (self.directory / "tmux.conf").write_text(TMUX_CONF)
        self.env = env
        await self.tmux(
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            str(WIDTH),
            "-y",
            str(HEIGHT),
            "-c",
            str(cwd),
            *command,
        )
        self.pane_pid = int(await self.tmux("display-message", "-p", "-t", "main", "#{pane_pid}"))

    async def screen(self) -> str:
        """The visible screen, wrapped lines joined."""
        return await self.tmux("capture-pane", "-p", "-J", "-t", "main")

    async def keys(self, *keys: str) -> None:
        """tmux key names: `Enter`, `Down`, `Space`, ..."""
        for key in keys:
            await self.tmux("send-keys", "-t", "main", key)

    async def type(self, text: str) -> None:
        """`text` typed literally."""
        await self.tmux("send-keys", "-t", "main", "-l", text)

    async def wait_for(
        self, done: Callable[[str], bool] | str, within: float, what: str = ""
    ) -> str:
        """The screen once `done(screen)` (or once it shows the text `done`); fail after
        `within` seconds showing the last screen."""
        test = (lambda screen: done in screen) if isinstance(done, str) else done
        deadline = time.monotonic() + within
        screen = ""
        while time.monotonic() < deadline:
            screen = await self.screen()
            if test(screen):
                return screen
            await asyncio.sleep(0.2)
        raise AssertionError(
            f"the terminal did not show {what or done!r} within {within} s:\n{screen}"
        )

    async def close(self, grace: float = 10.0) -> None:
        """The tmux server ended (its pane's program gets SIGHUP), then the program killed
        if it outlives it by `grace` seconds."""
        await self.tmux("kill-server", check=False)
        pid, self.pane_pid = self.pane_pid, None
        if pid is None:
            return
        deadline = time.monotonic() + grace
        while alive(pid):
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                return
            await asyncio.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextlib.asynccontextmanager
async def terminal(directory: Path) -> AsyncIterator[Terminal]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is missing: apt-get install tmux")
    term = Terminal(directory)
    try:
        yield term
    finally:
        await term.close()
