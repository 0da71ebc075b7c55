"""The tasks a 2025-11-25 session created, as one workflow per session: so the session's GET
stream finds their questions on any server replica, with no process's memory involved.

One `SessionTasksWorkflow` per (task queue, session digest), ID
`mcp-session-<queue>-<digest>`. It is not a task: no `mcp` memo, no `McpOwner` search
attribute, so tasks/list, tasks/get and every visibility query of the server pass it by.

Rules implemented:
- It is opened by the session's first task (signal-with-start), never by a stream: a session
  that creates no task leaves no workflow. Each task the session creates is
  one `TASK_CREATED_SIGNAL` naming it: the list is the history itself, which a stream reads
  and then follows with the history long-poll (mcp_server/tasks/session_tasks.py), so the
  workflow publishes nothing and keeps no state a replay could disagree with.
- History stays bounded: after `MAX_TASKS` tasks it closes, and the next task (or stream)
  opens a new run, which readers follow from its start; it closes once no task was added for
  `IDLE_CLOSE` (the next task opens a new run), and anyway `LIFETIME` after it started (a
  session id expires 24 h after `initialize`). Runs started before the idle close keep
  their day (`IDLE_PATCH`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow

SESSION_TASKS_WORKFLOW = "McpSessionTasks"
TASK_CREATED_SIGNAL = "mcp.session.task_created"
MAX_TASKS = 1000
LIFETIME = timedelta(hours=24)
IDLE_CLOSE = timedelta(minutes=10)
IDLE_PATCH = "session-tasks-idle-close"


@dataclass
class SessionTaskCreated:
    """The payload of `TASK_CREATED_SIGNAL`: the task a session created."""

    task_id: str


def session_tasks_workflow_id(task_queue: str, session: str) -> str:
    return f"mcp-session-{task_queue}-{session}"


@workflow.defn(name=SESSION_TASKS_WORKFLOW)
class SessionTasksWorkflow:
    def __init__(self) -> None:
        self.tasks = 0

    @workflow.signal(name=TASK_CREATED_SIGNAL)
    def task_created(self, created: SessionTaskCreated) -> None:
        del created  # readers take the task id from the signal's event in the history
        self.tasks += 1

    @workflow.run
    async def run(self, session: str) -> None:
        del session  # in the input for operators reading the history
        if workflow.patched(IDLE_PATCH):
            await self._until_idle()
            return
        try:
            await workflow.wait_condition(lambda: self.tasks >= MAX_TASKS, timeout=LIFETIME)
        except TimeoutError:
            pass  # the session is over: nothing more will be added

    async def _until_idle(self) -> None:
        ends = workflow.now() + LIFETIME
        while self.tasks < MAX_TASKS:
            within = min(IDLE_CLOSE, ends - workflow.now())
            if within <= timedelta(0) or not await self._added_within(self.tasks, within):
                return  # idle (or a day old): the session's next task opens a new run

    async def _added_within(self, seen: int, within: timedelta) -> bool:
        try:
            await workflow.wait_condition(lambda: self.tasks != seen, timeout=within)
        except TimeoutError:
            return False
        return True


WORKFLOWS = [SessionTasksWorkflow]
