"""Shell steps of a deploy pipeline, and the pipeline file itself.

`run_command` runs one step as a real subprocess in its own process group:
- its output (stdout and stderr) is kept, the last `OUTPUT_TAIL_BYTES` of it;
- it heartbeats every second, so a cancellation request reaches it within about a second and a
  dead worker is noticed within the heartbeat timeout;
- cancellation or its own timeout kills the whole process group (SIGTERM, then SIGKILL);
- a retry after a worker crash first kills what the crashed attempt left running (its process
  group id travels in the heartbeat details).
A step that exits non-zero is a result, not an exception: the workflow decides (roll back).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

OUTPUT_TAIL_BYTES = 4096
HEARTBEAT_EVERY_S = 1.0
KILL_GRACE_S = 5.0
MAX_STEP_TIMEOUT_S = 24 * 3600
INVALID_PIPELINE = "InvalidPipeline"


@dataclass
class CommandInput:
    command: str
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    timeout_seconds: float = 600


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _stop(process: asyncio.subprocess.Process) -> None:
    _kill_group(process.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), KILL_GRACE_S)
    except TimeoutError:
        _kill_group(process.pid, signal.SIGKILL)
        await process.wait()


async def _collect(stream: asyncio.StreamReader, tail: bytearray) -> None:
    while chunk := await stream.read(65536):
        tail.extend(chunk)
        del tail[:-OUTPUT_TAIL_BYTES]


@activity.defn(name="mcp_tasks.run_command")
async def run_command(step: CommandInput) -> dict[str, Any]:
    info = activity.info()
    if info.heartbeat_details:  # a previous attempt died with its worker: end what it started
        _kill_group(int(info.heartbeat_details[0]["pgid"]), signal.SIGKILL)
    started = time.monotonic()
    process = await asyncio.create_subprocess_shell(
        step.command,
        cwd=step.cwd,
        env={**os.environ, **step.env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    tail = bytearray()
    assert process.stdout is not None
    reader = asyncio.create_task(_collect(process.stdout, tail))
    timed_out = False
    try:
        while process.returncode is None:
            activity.heartbeat({"pgid": process.pid, "elapsed": round(time.monotonic() - started)})
            try:
                await asyncio.wait_for(process.wait(), HEARTBEAT_EVERY_S)
            except TimeoutError:
                if time.monotonic() - started > step.timeout_seconds:
                    timed_out = True
                    await _stop(process)
    except asyncio.CancelledError:
        await _stop(process)
        raise
    finally:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(reader, 5)
    return {
        "exitCode": process.returncode,
        "timedOut": timed_out,
        "durationSeconds": round(time.monotonic() - started, 3),
        "outputTail": tail.decode("utf-8", errors="replace"),
        "attempt": info.attempt,
    }


def _invalid(path: Path, problem: str) -> ApplicationError:
    return ApplicationError(f"{path.name}: {problem}", type=INVALID_PIPELINE, non_retryable=True)


def parse_pipeline(path: Path) -> dict[str, Any]:
    """A validated pipeline: {"description", "steps": [{name, run, cwd, env, ...}]}."""
    try:
        document = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise _invalid(path, f"cannot be read as TOML: {err}") from None
    steps = document.get("steps")
    if not isinstance(steps, list) or not steps:
        raise _invalid(path, "needs at least one [[steps]] table")
    parsed, names = [], set()
    for index, step in enumerate(steps, 1):
        if not isinstance(step, dict) or not isinstance(step.get("name"), str):
            raise _invalid(path, f"step {index} needs a name")
        name = step["name"]
        if name in names:
            raise _invalid(path, f"step name {name!r} is used twice")
        names.add(name)
        if not isinstance(step.get("run"), str) or not step["run"].strip():
            raise _invalid(path, f"step {name!r} needs a `run` command")
        env = step.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise _invalid(path, f"step {name!r}: env must map names to strings")
        timeout = step.get("timeout_seconds", 600)
        if not isinstance(timeout, int | float) or not 0 < timeout <= MAX_STEP_TIMEOUT_S:
            raise _invalid(path, f"step {name!r}: timeout_seconds must be in (0, 86400]")
        for optional in ("rollback", "approval", "cwd"):
            if optional in step and not isinstance(step[optional], str):
                raise _invalid(path, f"step {name!r}: {optional} must be a string")
        parsed.append(
            {
                "name": name,
                "run": step["run"],
                "cwd": str((path.parent / step.get("cwd", ".")).resolve()),
                "env": env,
                "timeout_seconds": timeout,
                "rollback": step.get("rollback"),
                "approval": step.get("approval"),
            }
        )
    return {"description": str(document.get("description", "")), "steps": parsed}


class PipelineFiles:
    """Reads pipelines from one directory only: a caller names a pipeline, never a path."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory).resolve()

    @activity.defn(name="mcp_tasks.load_pipeline")
    async def load_pipeline(self, name: str) -> dict[str, Any]:
        path = (self.directory / f"{name}.toml").resolve()
        if path.parent != self.directory or not path.is_file():
            raise ApplicationError(
                f"no pipeline named {name!r} in {self.directory}",
                type=INVALID_PIPELINE,
                non_retryable=True,
            )
        return parse_pipeline(path)
