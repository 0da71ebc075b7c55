"""The tool registry: the seam through which toolsets (built-in or a user's module) plug in.

A tool is either a synchronous function run inside the HTTP server, or a Temporal workflow
run as a task. Its `task_support` policy decides what `tools/call` does (wire §2.2):
- "never": always synchronous, never a task;
- "optional": a task when the request declares the tasks extension, otherwise the workflow is
  run attached to the call and awaited (at most `sync_timeout_s`, and the server's
  `sync_wait_s`), its questions put to the caller where it can take them; past that, the call
  answers a result naming the task, which runs on (never an error). The default for exposed
  workflows, and the choice for any tool a host without tasks should be able to use;
- "required": a task; a request without the extension gets -32021.

A toolset is a module with `register(registry: ToolRegistry) -> None`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from mcp_server.tasks.ttl import kept_for
from mcp_server.tools.patterns import ArgumentValidator
from mcp_tasks.contracts.tool_messages import InputRequest, ToolResult
from mcp_tasks.settings import Settings

TaskSupport = Literal["never", "optional", "required"]

DEFAULT_TTL_MS = 60 * 60 * 1000
DEFAULT_POLL_INTERVAL_MS = 1000
# A scope token (RFC 6749 §3.3).
SCOPE_TOKEN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")


# report_progress(progress, total, message): one `notifications/progress` (wire §1.9).
ProgressReporter = Callable[[float, float | None, str | None], Awaitable[None]]


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    """Where progress goes when nobody listens (no progressToken, or no stream to send it on)."""


# log(level, data): one `notifications/message` (level "debug" ... "emergency"; data any JSON).
Logger = Callable[[str, Any], Awaitable[None]]


async def _no_log(level: str, data: Any) -> None:
    """Where log messages go when nobody asked for them (or there is no stream to send on)."""


@dataclass(frozen=True)
class ToolCall:
    """What a synchronous tool handler receives."""

    name: str
    arguments: dict[str, Any]
    client_capabilities: dict[str, Any]
    # Answers gathered by MRTR rounds (keys of the tool's `mrtr`).
    input_responses: dict[str, Any]
    # Sends `notifications/progress` on this request's own response stream when the request
    # carries `_meta.progressToken`; otherwise does nothing, so a handler may always call it.
    report_progress: ProgressReporter = _no_progress
    # Sends `notifications/message` on this request's own response stream when the client asked
    # for log messages at that level; otherwise does nothing, so a handler may always call it.
    log: Logger = _no_log


SyncHandler = Callable[[ToolCall], Awaitable[ToolResult]]

# Input requests (MRTR) by the key their answers come back under, e.g.
# {"name": {"method": "elicitation/create", "params": {...}}}.
InputRequests = dict[str, InputRequest]


@dataclass(frozen=True)
class MrtrRound:
    """What `mrtr` of several rounds sees besides the arguments."""

    # This request's capabilities (each request declares its own; nothing is remembered).
    client_capabilities: dict[str, Any]
    # Answers gathered in earlier rounds, by the keys they were asked under.
    answers: dict[str, Any]


# The input a tool needs before it runs (MRTR), in one of two forms:
# - `mrtr(arguments)` returns every input request at once; they are asked in one round
#   (those already answered are not asked again);
# - `mrtr(arguments, so_far: MrtrRound)` returns the requests it still needs given the
#   answers so far, so a later round can depend on an earlier answer, and what is asked can
#   depend on the client's capabilities. Returning an answered key asks it again.
# Either way `{}` lets the tool run. `mrtr` must be a pure function of its inputs: to
# validate a retry, the server recomputes the round the retry answers.
Mrtr = (
    Callable[[dict[str, Any]], InputRequests] | Callable[[dict[str, Any], MrtrRound], InputRequests]
)


def _sees_answers(mrtr: Mrtr) -> bool:
    """Whether `mrtr` is of the second form (takes the answers so far)."""
    signature = inspect.signature(mrtr)
    for arity in (2, 1):
        try:
            signature.bind(*[None] * arity)
        except TypeError:
            continue
        return arity == 2
    raise ValueError("mrtr takes (arguments) or (arguments, so_far)")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    title: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    task_support: TaskSupport = "never"
    handler: SyncHandler | None = None
    workflow: str | None = None
    ttl_ms: int | None = DEFAULT_TTL_MS
    poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS
    mrtr: Mrtr | None = None
    # Client capabilities the tool cannot run without (e.g. {"elicitation": {}} for a task
    # that asks questions); a request that lacks one gets -32021.
    required_capabilities: dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]] = field(
        default_factory=dict
    )
    sync_timeout_s: float = 60.0
    # Argument names whose values must never reach logs, memos or status messages.
    secret_arguments: frozenset[str] = frozenset()
    # Scopes a caller's credential must hold to call the tool (tokens: the file's "scopes";
    # jwt: the `scope`/`scp` claim; the local user holds all). Without one: HTTP 403.
    scopes: frozenset[str] = frozenset()
    # Handed to the workflow as TaskInput.tool_config (one workflow type, several tools).
    workflow_config: dict[str, Any] = field(default_factory=dict)
    # What one call does, in a sentence for people, from its arguments (the approval inbox shows
    # it on the task's page); None: nothing beyond the arguments. Must not raise.
    describe: Callable[[dict[str, Any]], str | None] | None = None
    # Whether its task reads steer messages (`steering`) and holds when paused (`pausable`) at
    # its safe points (workflows/steering.py); the server refuses both to any other tool's task.
    steering: bool = False
    pausable: bool = False
    # Whether `mrtr` is of the form that sees the answers so far (set from its signature).
    _mrtr_sees_answers: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.task_support == "never" and self.handler is None:
            raise ValueError(f"tool {self.name!r}: a synchronous tool needs a handler")
        if self.task_support == "never" and (self.steering or self.pausable):
            raise ValueError(f"tool {self.name!r}: only a task can be steered or paused")
        if self.task_support != "never" and self.workflow is None:
            raise ValueError(f"tool {self.name!r}: a task tool needs a workflow type")
        if self.ttl_ms is not None and self.ttl_ms <= 0:
            raise ValueError(f"tool {self.name!r}: ttl_ms must be positive or None")
        if self.poll_interval_ms <= 0:
            raise ValueError(f"tool {self.name!r}: poll_interval_ms must be positive")
        if self.input_schema.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: inputSchema must have type 'object'")
        Draft202012Validator.check_schema(self.input_schema)
        if isinstance(self.scopes, str):
            raise ValueError(f"tool {self.name!r}: scopes is a set of scopes, not one string")
        object.__setattr__(self, "scopes", frozenset(self.scopes))  # a list works too
        if not all(SCOPE_TOKEN.match(scope) for scope in self.scopes):
            raise ValueError(f"tool {self.name!r}: a scope is visible ASCII without '\"' or '\\'")
        if self.mrtr is not None:
            try:
                sees_answers = _sees_answers(self.mrtr)
            except ValueError as exc:
                raise ValueError(f"tool {self.name!r}: {exc}") from None
            object.__setattr__(self, "_mrtr_sees_answers", sees_answers)

    def still_needed(self, arguments: dict[str, Any], so_far: MrtrRound) -> InputRequests:
        """The input requests the tool still needs before it can run ({} when none)."""
        if self.mrtr is None:
            return {}
        if self._mrtr_sees_answers:
            multi = cast(Callable[[dict[str, Any], MrtrRound], InputRequests], self.mrtr)
            return multi(arguments, so_far)
        single = cast(Callable[[dict[str, Any]], InputRequests], self.mrtr)
        return {k: r for k, r in single(arguments).items() if k not in so_far.answers}

    def capabilities_for(self, arguments: dict[str, Any]) -> dict[str, Any]:
        required = self.required_capabilities
        return required(arguments) if callable(required) else required

    def wire(self) -> dict[str, Any]:
        """The `Tool` object of tools/list (2026-07-28 has no `execution` field)."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.title:
            out["title"] = self.title
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations:
            out["annotations"] = self.annotations
        return out


@dataclass(frozen=True)
class ToolDirectory:
    """A directory some tools read at run time: the Settings field naming it, its path as set
    (relative paths are from the working directory), the tools that read it."""

    setting: str
    path: str
    tools: tuple[str, ...]

    @property
    def variable(self) -> str:
        return f"MCP_TASKS_{self.setting.upper()}"


class ToolRegistry:
    def __init__(self, settings: Settings | None = None) -> None:
        # What toolsets may read to configure their activities (e.g. pipelines_dir).
        self.settings = settings or Settings()
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, Validator] = {}
        self._listeners: list[Callable[[], None]] = []
        self.workflows: list[type] = []
        self.activities: list[Callable[..., Any]] = []
        # The directories the toolset's activities read at run time, by the setting that
        # names each (a worker warns at start about any that is missing).
        self.directories: dict[str, ToolDirectory] = {}

    def add(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool
        # ECMA-262 patterns: `$` is the end of the string, as clients read it (patterns.py).
        self._validators[tool.name] = ArgumentValidator(tool.input_schema)
        self._changed()
        return tool

    def remove(self, name: str) -> None:
        if self._tools.pop(name, None) is not None:
            del self._validators[name]
            self._changed()

    def on_change(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener` after every change of the tool list; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @property
    def listener_count(self) -> int:
        """How many `on_change` listeners are subscribed now (a listen stream that asked for
        tool changes holds one while it is open)."""
        return len(self._listeners)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    def add_workflows(self, workflows: Sequence[type]) -> None:
        self.workflows.extend(w for w in workflows if w not in self.workflows)

    def needs_directory(self, setting: str, path: str, tool: str) -> None:
        """`tool`'s activities read the directory `path`, which the setting `setting` (a field of
        Settings, e.g. `pipelines_dir`) names."""
        known = self.directories.get(setting)
        tools = (*known.tools, tool) if known else (tool,)
        self.directories[setting] = ToolDirectory(setting, path, tools)

    def add_activities(self, activities: Sequence[Callable[..., Any]]) -> None:
        self.activities.extend(a for a in activities if a not in self.activities)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def argument_errors(self, name: str, arguments: dict[str, Any]) -> list[str]:
        validator = self._validators[name]
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        return [
            f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
            for error in errors[:10]
        ]

    def scopes(self) -> frozenset[str]:
        """Every scope some tool needs (the protected-resource metadata lists them)."""
        return frozenset().union(*(tool.scopes for tool in self._tools.values()))

    def longest_ttl_ms(self) -> int | None:
        """How long closed tasks must be kept: the longest TTL, plus its grace after closing."""
        finite = [t.ttl_ms for t in self._tools.values() if t.task_support != "never" and t.ttl_ms]
        return max(kept_for(ttl) for ttl in finite) if finite else None
