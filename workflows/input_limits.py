"""How much a task may ask at once: its questions must fit the memo Temporal stores.

A task's open input requests are published in its memo (TaskState.to_memo), which Temporal
refuses above 2 MiB: a question that large used to fail the workflow task on every attempt,
so the task could neither go on nor be cancelled. Now `ask()`/`ask_all()` measure the memo the
question would publish first and, above `MAX_MEMO_BYTES` (half of Temporal's cap: the
question also travels in webhook deliveries, next to the rest of the state), raise
`ApplicationError` of type `InputRequestsTooLarge`, non-retryable: the tool may catch it and
ask something smaller, else the task fails with that message.

Determinism: `workflow.patched(INPUT_SIZE_PATCH)` is reached only by an oversized question,
so no other task records a marker or issues a new command, and a history recorded before the
check (a question under Temporal's cap but over ours) replays as it ran.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from mcp_tasks.contracts.task_state import TaskState
from workflows.results import encoded_size

INPUT_SIZE_PATCH = "input-requests-size-limit"
INPUT_TOO_LARGE_ERROR = "InputRequestsTooLarge"
MAX_MEMO_BYTES = 1_000_000


def refuse_oversized(state: TaskState, keys: list[str]) -> None:
    """Raise InputRequestsTooLarge when the memo of `state` (the state the question would
    publish) is too large to store; return otherwise."""
    size = encoded_size(state.to_memo())
    if size <= MAX_MEMO_BYTES or not workflow.patched(INPUT_SIZE_PATCH):
        return
    raise ApplicationError(
        f"The input requests {', '.join(keys)} would make the task's state {size:,} bytes, "
        f"above the {MAX_MEMO_BYTES:,}-byte limit of what a task may ask at once; ask for "
        "less (put large content elsewhere and reference it)",
        {"size": size, "limit": MAX_MEMO_BYTES},
        type=INPUT_TOO_LARGE_ERROR,
        non_retryable=True,
    )
