"""`request_approval`: a human decision that may take days.

While it waits, the workflow holds nothing but a timer and a condition: the worker may evict it
from its cache (it is replayed from history when the answer arrives), and every component may
restart in between. The optional deadline is a durable Temporal timer, not a poll loop.

With `approvers` (the argument, else the server's MCP_TASKS_APPROVAL_APPROVERS, handed over
as the tool's config), only they decide (mcp_tasks/contracts/approvers.py); the result names
who did.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow

from mcp_tasks.contracts.task_state import TaskInput
from mcp_tasks.contracts.tool_messages import ToolResult
from workflows.results import text_result
from workflows.task_workflow import TaskWorkflow, elicitation, task_workflow

DECISIONS = {"approve": "approved", "reject": "rejected"}


@task_workflow("RequestApproval")
class RequestApprovalWorkflow(TaskWorkflow):
    async def execute(self, task: TaskInput) -> ToolResult:
        message = str(task.arguments["message"])
        deadline_s = task.arguments.get("deadline_seconds")
        properties: dict[str, Any] = {
            "decision": {"type": "string", "title": "Decision", "enum": list(DECISIONS)},
            "reason": {"type": "string", "title": "Reason", "maxLength": 2000},
        }
        required = ["decision"]
        if task.arguments.get("require_reason"):
            # Required and not blank: an empty string is no reason (the server checks every
            # answer against this form, mcp_server/protocol/frame/answer_schema.py).
            required.append("reason")
            properties["reason"] = {**properties["reason"], "minLength": 1}
        asked_at = workflow.now()
        until = (
            f" (until {(asked_at + timedelta(seconds=deadline_s)).isoformat()})"
            if deadline_s
            else ""
        )
        approvers = task.arguments.get("approvers") or task.tool_config.get("approvers")
        try:
            answer = await self.ask(
                "decision",
                elicitation(message, properties, required),
                status_message=f"Waiting for a decision{until}",
                timeout=timedelta(seconds=deadline_s) if deadline_s else None,
                approvers=[str(name) for name in approvers] if approvers else None,
            )
        except TimeoutError:
            return self._outcome("expired", None, None, asked_at)
        content = answer.content
        if not answer.accepted or content.get("decision") not in DECISIONS:
            # The human dismissed the form: no decision was made.
            return self._outcome("dismissed", None, self.answered_by.get("decision"), asked_at)
        reason = content.get("reason")
        return self._outcome(
            DECISIONS[content["decision"]],
            str(reason) if reason else None,
            self.answered_by.get("decision"),
            asked_at,
        )

    def _outcome(
        self, decision: str, reason: str | None, decided_by: str | None, asked_at: Any
    ) -> ToolResult:
        waited = (workflow.now() - asked_at).total_seconds()
        # Who decided, by name (SubmitInput.by); said in the text when approvers decide.
        name = self._current.answered_by.get("decision") if decided_by else None
        by = f" by {name}" if name and self._current.approvers else ""
        text = f"Decision: {decision}{by}" + (f" ({reason})" if reason else "")
        return text_result(
            text,
            structured={
                "decision": decision,
                "reason": reason,
                "decidedBy": decided_by,
                "decidedByName": name,
                "waitedSeconds": round(waited, 3),
            },
        )


WORKFLOWS = [RequestApprovalWorkflow]
