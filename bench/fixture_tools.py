"""The benchmark's short task, loaded the way a user's tool module is (MCP_TASKS_TOOL_MODULES,
after the demo module, whose MultiStepJob workflow it starts: no workflow type of its own).

`bench_short_job` runs one step of `step_seconds` as an activity, and advertises 500 ms, the
conformance toolset's interval. Not `slow_compute`: its body is a Temporal timer, and the dev
server fires a timer of 50 ms only about 1 s after it started (measured: TimerFired 1.0 s
after TimerStarted), so a "50 ms" timer task would take a second.
"""

from __future__ import annotations

from mcp_server.tools.registry import Tool, ToolRegistry

SHORT_JOB = "bench_short_job"


def register(registry: ToolRegistry) -> None:
    registry.add(
        Tool(
            SHORT_JOB,
            "Runs one step of `step_seconds` as a durable activity (the benchmark's short task).",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 200},
                    "steps": {"const": 1},
                    "step_seconds": {"type": "number", "minimum": 0, "maximum": 10},
                },
                "required": ["name", "step_seconds"],
            },
            task_support="optional",
            workflow="MultiStepJob",
            ttl_ms=3_600_000,
            poll_interval_ms=500,
        )
    )
