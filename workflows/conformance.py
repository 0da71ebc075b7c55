"""Task workflows behind the fixture tools of the official conformance suite (conformance.md).

The questions the 2025-11-25 scenarios expect a tool to ask mid-call (sampling, elicitation and
the SEP-1034 and SEP-1330 forms) are asked with `self.ask(...)`: a host that called without
`task` gets them as requests on its response stream, and its answer reaches the workflow from
any replica.
"""

from __future__ import annotations

import json
from typing import Any

from temporalio import workflow

from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import InputResponse, ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, protocol_error, task_workflow


@task_workflow("SlowCompute")
class SlowComputeWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        seconds = float(task.arguments.get("seconds", 0))
        label = str(task.arguments.get("label", ""))
        self.report(f"Computing {label!r} for {seconds:g} s")
        # A durable timer: a cancellation request interrupts it at once.
        await workflow.sleep(seconds)
        return text_result(
            f"Computed {label!r} in {seconds:g} s",
            structured={"label": label, "seconds": seconds},
        )


@task_workflow("FailingJob")
class FailingJobWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        self.report("Running a job that will fail")
        await workflow.sleep(1)
        return text_result("failing_job failed: the simulated job reported an error", is_error=True)


@task_workflow("ProtocolErrorJob")
class ProtocolErrorJobWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        self.report("Running a job that will hit a protocol error")
        await workflow.sleep(0.5)
        raise protocol_error(-32603, "protocol_error_job: simulated internal error")


@task_workflow("ConfirmDelete")
class ConfirmDeleteWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        filename = str(task.arguments["filename"])
        answer = await self.ask(
            "confirm",
            elicitation(
                f"Delete {filename}?",
                {"confirm": {"type": "boolean", "title": f"Delete {filename}"}},
                ["confirm"],
            ),
            status_message=f"Waiting for confirmation to delete {filename}",
        )
        if answer.accepted and answer.content.get("confirm") is True:
            return text_result(f"Deleted {filename}", structured={"deleted": True})
        return text_result(
            f"Kept {filename}: deletion was not confirmed", structured={"deleted": False}
        )


@task_workflow("MultiInput")
class MultiInputWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        answers = await self.ask_all(
            {
                "name": elicitation("What is your name?", {"name": {"type": "string"}}, ["name"]),
                "confirm": elicitation(
                    "Do you confirm?", {"confirm": {"type": "boolean"}}, ["confirm"]
                ),
            },
            status_message="Waiting for two answers",
        )
        summary = ", ".join(
            f"{key}: {answer.action} {answer.raw.get('content')}" for key, answer in answers.items()
        )
        return text_result(f"Received both inputs ({summary})")


@task_workflow("TestToolWithTask")
class TestToolWithTaskWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        answer = InputResponse.read(task.prelude_responses.get("name"))
        name = str(answer.content.get("name", "stranger"))
        self.report(f"Greeting {name}")
        await workflow.sleep(0.5)
        return text_result(f"Hello, {name}! This greeting ran as a durable task.")


def _completed(answer: InputResponse) -> ToolResult:
    """The text the elicitation fixtures return: the action and the content, as JSON."""
    content = json.dumps(answer.content, sort_keys=True)
    return text_result(f"Elicitation completed: action={answer.action}, content={content}")


@task_workflow("TestSampling")
class TestSamplingWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        message = {"role": "user", "content": {"type": "text", "text": task.arguments["prompt"]}}
        answer = await self.ask(
            "sample",
            {
                "method": "sampling/createMessage",
                "params": {"messages": [message], "maxTokens": 100},
            },
            status_message="Waiting for the client's LLM",
        )
        content = answer.raw.get("content")
        blocks = content if isinstance(content, list) else [content]
        texts = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        return text_result(f"LLM response: {' '.join(texts) or json.dumps(content)}")


@task_workflow("TestElicitation")
class TestElicitationWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        properties = {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        }
        answer = await self.ask(
            "info",
            elicitation(str(task.arguments["message"]), properties, ["username", "email"]),
            status_message="Waiting for the user's information",
        )
        content = json.dumps(answer.content, sort_keys=True)
        return text_result(f"User response: action={answer.action}, content={content}")


# SEP-1034: a default for every primitive type.
_DEFAULTS_FORM: dict[str, Any] = {
    "name": {"type": "string", "default": "John Doe"},
    "age": {"type": "integer", "default": 30},
    "score": {"type": "number", "default": 95.5},
    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "default": True},
}


@task_workflow("TestElicitationDefaults")
class TestElicitationDefaultsWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        answer = await self.ask(
            "profile",
            elicitation("Review your profile (every field has a default)", _DEFAULTS_FORM),
            status_message="Waiting for the profile form",
        )
        return _completed(answer)


def _titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": const, "title": title} for const, title in pairs]


# SEP-1330: the five enum forms, single and multiple choice, with and without titles.
_ENUMS_FORM: dict[str, Any] = {
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {
        "type": "string",
        "oneOf": _titled(
            ("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")
        ),
    },
    "legacyEnum": {
        "type": "string",
        "enum": ["opt1", "opt2", "opt3"],
        "enumNames": ["Option One", "Option Two", "Option Three"],
    },
    "untitledMulti": {
        "type": "array",
        "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
    },
    "titledMulti": {
        "type": "array",
        "items": {
            "anyOf": _titled(
                ("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")
            )
        },
    },
}


@task_workflow("TestElicitationEnums")
class TestElicitationEnumsWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        answer = await self.ask(
            "choices",
            elicitation("Choose options (every enum form)", _ENUMS_FORM),
            status_message="Waiting for the choices form",
        )
        return _completed(answer)


WORKFLOWS = [
    SlowComputeWorkflow,
    FailingJobWorkflow,
    ProtocolErrorJobWorkflow,
    ConfirmDeleteWorkflow,
    MultiInputWorkflow,
    TestToolWithTaskWorkflow,
    TestSamplingWorkflow,
    TestElicitationWorkflow,
    TestElicitationDefaultsWorkflow,
    TestElicitationEnumsWorkflow,
]
