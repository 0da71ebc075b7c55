"""Shell steps of a deploy pipeline, and the pipeline file itself.

A pipeline file is validated by the `Pipeline` model before anything runs: a problem is a
non-retryable `InvalidPipeline` error naming the file, the key (`steps[2].timeout_seconds`) and
the step, e.g. `deploy.toml: steps[2].timeout_seconds (step 'migrate'): must be in (0, 86400]`.

`run_command` runs one step as a real subprocess in its own process group:
- its output (stdout and stderr) is kept, the last `OUTPUT_TAIL_BYTES` of it;
- it heartbeats every second, so a cancellation request reaches it within about a second and a
  dead worker is noticed within the heartbeat timeout;
- cancellation or its own timeout kills the whole process group (SIGTERM, then SIGKILL);
- its shell dies with the worker (PR_SET_PDEATHSIG), so a worker process killed alone (kill -9,
  the OOM killer) leaves no step to finish unseen while the retry runs it again;
- a retry after a worker crash first kills what the crashed attempt left running (its process
  group id travels in the heartbeat details).
A step that exits non-zero is a result, not an exception: the workflow decides (roll back).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import re
import signal
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails
from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from mcp_tasks.contracts.approvers import invalid_approvers

OUTPUT_TAIL_BYTES = 4096
HEARTBEAT_EVERY_S = 1.0
KILL_GRACE_S = 5.0
MAX_STEP_TIMEOUT_S = 24 * 3600
INVALID_PIPELINE = "InvalidPipeline"
# What a caller may name: the published schema's pattern, checked here as a whole string.
PIPELINE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


@dataclass
class CommandInput:
    command: str
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    timeout_seconds: float = 600


_PR_SET_PDEATHSIG = 1


def _die_with_worker() -> None:
    """Run in the step's child before its shell starts: SIGKILL once the worker is gone."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


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
    try:
        process = await asyncio.create_subprocess_shell(
            step.command,
            cwd=step.cwd,
            env={**os.environ, **step.env},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_worker,
        )
    except OSError as err:
        # The error's own text names the absolute cwd: only its last part reaches the client.
        raise ApplicationError(
            f"the step cannot start in its cwd {Path(step.cwd).name!r}: {err.strerror}",
            type=INVALID_PIPELINE,
            non_retryable=True,
        ) from None
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


class PipelineStep(BaseModel):
    """One `[[steps]]` table; keys this version does not know are ignored."""

    model_config = ConfigDict(strict=True, frozen=True)

    name: str
    run: str
    cwd: str = "."
    env: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(600, gt=0, le=MAX_STEP_TIMEOUT_S)
    rollback: str | None = None
    # An approval gate: this question is asked (an elicitation) before the step runs.
    approval: str | None = None
    # Who answers it (mcp_tasks/contracts/approvers.py); None: the caller.
    approvers: list[str] | None = None

    @field_validator("run")
    @classmethod
    def _a_command(cls, run: str) -> str:
        if not run.strip():
            raise ValueError("must be a shell command, not blank")
        return run

    @field_validator("approvers")
    @classmethod
    def _approver_names(cls, approvers: list[str] | None) -> list[str] | None:
        problem = invalid_approvers(approvers) if approvers is not None else None
        if problem is not None:
            raise ValueError(problem)
        return approvers

    @model_validator(mode="after")
    def _approvers_of_a_gate(self) -> PipelineStep:
        if self.approvers is not None and self.approval is None:
            raise ValueError("approvers name who answers an approval: this step has none")
        return self


class Pipeline(BaseModel):
    """A pipeline file: a description and at least one step, each named once."""

    model_config = ConfigDict(strict=True, frozen=True)

    # Anything is accepted and shown as text, as it always was.
    description: Annotated[str, BeforeValidator(str)] = ""
    steps: list[PipelineStep] = Field(min_length=1)

    @field_validator("steps")
    @classmethod
    def _named_once(cls, steps: list[PipelineStep]) -> list[PipelineStep]:
        first: dict[str, int] = {}
        for index, step in enumerate(steps):
            if step.name in first:
                raise ValueError(
                    f"the name {step.name!r} is used twice (steps[{first[step.name]}] "
                    f"and steps[{index}])"
                )
            first[step.name] = index
        return steps


_PROBLEMS = {
    "missing": "is required",
    "string_type": "must be a string",
    "float_type": "must be a number",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "list_type": "must be an array of tables ([[steps]])",
    "too_short": "needs at least one [[steps]] table",
    "greater_than": f"must be in (0, {MAX_STEP_TIMEOUT_S}]",
    "less_than_equal": f"must be in (0, {MAX_STEP_TIMEOUT_S}]",
}


def _problem(error: ErrorDetails, document: dict[str, Any]) -> str:
    """`steps[2].timeout_seconds (step "migrate"): must be in (0, 86400]`."""
    loc = error["loc"]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    where = where.lstrip(".") or "the file"
    if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
        name = document["steps"][loc[1]]
        name = name.get("name") if isinstance(name, dict) else None
        where += f" (step {name!r})" if isinstance(name, str) else ""
    if error["type"] == "value_error":
        return f"{where}: {error['ctx']['error']}"
    if error["type"] == "list_type" and loc != ("steps",):
        return f"{where}: must be an array of strings"
    return f"{where}: {_PROBLEMS.get(error['type'], error['msg'])}"


def _invalid(path: Path, problem: str) -> ApplicationError:
    return ApplicationError(f"{path.name}: {problem}", type=INVALID_PIPELINE, non_retryable=True)


def parse_pipeline(path: Path) -> dict[str, Any]:
    """A validated pipeline: {"description", "steps": [{name, run, cwd, env, ...}]}, with each
    `cwd` resolved against the file's directory. Every problem names the file and the key."""
    try:
        document = tomllib.loads(path.read_text())
    except OSError as err:  # its text would name the absolute path
        raise _invalid(path, f"cannot be read: {err.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise _invalid(path, f"cannot be read as TOML: {err}") from None
    try:
        pipeline = Pipeline.model_validate(document)
    except ValidationError as err:
        problems = "; ".join(_problem(error, document) for error in err.errors())
        raise _invalid(path, problems) from None
    # `approvers` only where a step names them: every other step reads as it always did.
    steps = [
        {
            **step.model_dump(exclude={"approvers"}),
            **({"approvers": list(step.approvers)} if step.approvers else {}),
            "cwd": str((path.parent / step.cwd).resolve()),
        }
        for step in pipeline.steps
    ]
    return {"description": pipeline.description, "steps": steps}


def _expected(err: ApplicationError) -> ApplicationError:
    """A refusal the caller caused (a pipeline that does not exist or does not parse): one
    INFO line, and the error marked BENIGN, so the SDK logs its own line at DEBUG instead of a
    traceback at WARNING (and counts no activity failure)."""
    activity.logger.info("pipeline refused: %s", err.message)
    return ApplicationError(
        err.message,
        *err.details,
        type=err.type,
        non_retryable=True,
        category=ApplicationErrorCategory.BENIGN,
    )


class PipelineFiles:
    """Reads pipelines from one directory only: a caller names a pipeline, never a path, and
    errors never show where that directory is."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory).resolve()

    @activity.defn(name="mcp_tasks.load_pipeline")
    async def load_pipeline(self, name: str) -> dict[str, Any]:
        try:
            return self._load(name)
        except ApplicationError as err:
            raise _expected(err) from None

    def describe(self, arguments: dict[str, Any]) -> str | None:
        """The description of the pipeline a deploy's arguments name, as this process sees the
        directory (None: no such pipeline here, or an invalid one). For people, e.g. the
        approval inbox; never raises."""
        try:
            description = self._load(str(arguments.get("pipeline", "")))["description"]
        except (ApplicationError, OSError, ValueError):
            return None
        return str(description) or None

    def _load(self, name: str) -> dict[str, Any]:
        if not PIPELINE_NAME.fullmatch(name):
            raise ApplicationError(
                f"{name!r} is not a pipeline name ({PIPELINE_NAME.pattern})",
                type=INVALID_PIPELINE,
                non_retryable=True,
            )
        path = (self.directory / f"{name}.toml").resolve()
        if path.parent != self.directory or not path.is_file():
            raise ApplicationError(
                f"no pipeline named {name!r} in the pipelines directory",
                type=INVALID_PIPELINE,
                non_retryable=True,
            )
        return parse_pipeline(path)
