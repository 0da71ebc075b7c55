"""Tools that start workflows the user's own workers already serve.

The file named by `MCP_TASKS_EXPOSED_WORKFLOWS_FILE` lists them:

[[tools]]
name = "refund_order"                      # the MCP tool
description = "Refund an order"
workflow = "RefundOrder"                   # the workflow type, as registered by its worker
task_queue = "payments"                    # where the user's workers poll
input_schema = { type = "object", properties = { order_id = { type = "string" } } }
positional = ["order_id"]                  # optional: pass these arguments in this order;
                                           # default: the arguments object as one argument
result_path = "receipt"                    # optional: the part of the result to return
ttl_hours = 24                             # optional (default 24)
poll_interval_ms = 2000                    # optional (default 2000)
no_worker_wait_seconds = 60                # optional: when the child has not started by then,
                                           # the statusMessage says why (default 60)
cancel_wait_seconds = 30                   # optional: tasks/cancel waits this long for the
                                           # child to stop, then ends the task (default 30)
task_support = "optional"                  # optional: "optional" (default) runs the tool
                                           # attached to the call for a client without
                                           # tasks; "required" refuses it (-32021)
steering = true                            # optional: the workflow takes mcp.steer messages
pausable = true                            # optional: it takes mcp.pause / mcp.resume

The file is validated as a whole before any tool is added: an unknown key (a misspelling), a
missing or mistyped value, or an `input_schema` that is not a JSON Schema of an object is a
`ConfigError` naming the file, the entry (index and name) and the key:
`exposed.toml: tools[1].ttl_hours (tool 'refund_order'): must be greater than 0`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from activities import exposed as exposed_activities
from mcp_server.tools.registry import Tool, ToolRegistry
from mcp_tasks.settings import ConfigError, describe, key_path
from workflows import exposed

Name = Annotated[str, StringConstraints(min_length=1)]


class ExposedWorkflow(BaseModel):
    """One `[[tools]]` entry: an MCP tool that runs the user's workflow as a child."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")

    name: Name
    workflow: Name
    task_queue: Name
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    positional: list[str] = Field(default_factory=list)
    result_path: str | None = None
    ttl_hours: float = Field(24, gt=0)
    poll_interval_ms: int = Field(2000, gt=0)
    no_worker_wait_seconds: float = Field(exposed.NO_WORKER_WAIT_S, gt=0)
    cancel_wait_seconds: float = Field(exposed.CANCEL_WAIT_S, gt=0)
    # A host without tasks gets the run attached to its call (and the follow-up tools when it
    # outlasts the wait) unless the entry says "required".
    task_support: Literal["optional", "required"] = "optional"
    # Whether the workflow speaks these parts of the interactive contract; without them the
    # server refuses to steer or pause its tasks.
    steering: bool = False
    pausable: bool = False

    @field_validator("input_schema")
    @classmethod
    def _object_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("type") != "object":
            raise ValueError('must be the JSON Schema of an object (type = "object")')
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as err:
            raise ValueError(f"is not a valid JSON Schema: {err.message}") from None
        return schema

    def tool(self) -> Tool:
        return Tool(
            name=self.name,
            description=self.description or f"Runs the {self.workflow} workflow.",
            input_schema=self.input_schema,
            task_support=self.task_support,
            workflow="ExposedWorkflow",
            ttl_ms=int(self.ttl_hours * 3_600_000),
            poll_interval_ms=self.poll_interval_ms,
            steering=self.steering,
            pausable=self.pausable,
            workflow_config={
                "workflow": self.workflow,
                "task_queue": self.task_queue,
                "positional": list(self.positional),
                "result_path": self.result_path,
                "no_worker_wait_seconds": self.no_worker_wait_seconds,
                "cancel_wait_seconds": self.cancel_wait_seconds,
            },
        )


class ExposedWorkflowsFile(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")

    tools: list[ExposedWorkflow] = Field(default_factory=list)


def _where(loc: tuple[int | str, ...], document: dict[str, Any]) -> str:
    """`tools[1].ttl_hours (tool 'refund_order')`: the key, and the entry by index and name."""
    where = key_path(loc) or "the file"
    if len(loc) >= 2 and loc[0] == "tools" and isinstance(loc[1], int):
        entry = document["tools"][loc[1]]
        name = entry.get("name") if isinstance(entry, dict) else None
        where += f" (tool {name!r})" if isinstance(name, str) else ""
    return where


def load(source: Path) -> list[ExposedWorkflow]:
    """The entries of `source`, all validated; a problem is a ConfigError naming its key."""
    try:
        document = tomllib.loads(source.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{source}: cannot be read as TOML: {err}") from None
    try:
        return list(ExposedWorkflowsFile.model_validate(document).tools)
    except ValidationError as err:
        problems = [f"{_where(e['loc'], document)}: {describe(e)}" for e in err.errors()]
        raise ConfigError(f"{source}: {'; '.join(problems)}") from None


def register_runtime(registry: ToolRegistry) -> None:
    """The task workflow and activity every exposed tool runs on. Every worker registers them,
    with or without the file: a task carries its tool's configuration in its input
    (TaskInput.tool_config), so only the server, which lists the tools, reads the file."""
    registry.add_workflows(exposed.WORKFLOWS)
    registry.add_activities(exposed_activities.ACTIVITIES)


def register(registry: ToolRegistry) -> None:
    """The tools of the file named by MCP_TASKS_EXPOSED_WORKFLOWS_FILE."""
    for entry in load(Path(str(registry.settings.exposed_workflows_file))):
        registry.add(entry.tool())
