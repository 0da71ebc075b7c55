"""How the task store changes a running task (tasks/store.py), durably even with no worker
alive: answers and steering are signals, a cancellation a Temporal cancellation request after
a signal saying who asked.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_server.tasks.errors import from_rpc_error
from mcp_server.tasks.followed import FollowedTasks
from mcp_server.tasks.timeouts import RPC_TIMEOUT
from mcp_tasks.contracts.task_state import (
    CANCEL_REQUESTED_SIGNAL,
    SUBMIT_INPUT_SIGNAL,
    AuditStamp,
    SubmitInput,
)
from workflows.steering import SteerInput


class TaskSignals:
    """Answers, steering, cancels: a part of `TemporalTaskStore` (store.py), which sets these."""

    _client: Client
    followed: FollowedTasks

    async def submit_input(self, task_id: str, update: SubmitInput) -> None:
        await self._signal(
            task_id,
            SUBMIT_INPUT_SIGNAL,
            update,
            "deliver the answers",
            delivered=lambda: self.followed.answered(task_id, update.responses),
        )

    async def steer(self, task_id: str, signal: str, payload: SteerInput | AuditStamp) -> None:
        """Send a steering signal (workflows/steering.py: a steer message, a pause, a resume)
        to the task: durable with no worker alive, as an answer is."""
        await self._signal(task_id, signal, payload, "steer the task")

    async def _signal(
        self,
        task_id: str,
        signal: str,
        payload: object,
        doing: str,
        delivered: Callable[[], None] | None = None,
    ) -> None:
        """Signal the task; a task closed meanwhile has nothing to take in (not an error).
        Then `delivered()` once Temporal took the signal; otherwise (no `delivered`, or the
        signal failed: it may have reached Temporal all the same) the caller's next tasks/get
        reads Temporal."""
        took = False
        try:
            await self._client.get_workflow_handle(task_id).signal(
                signal, payload, rpc_timeout=RPC_TIMEOUT
            )
            took = True
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise from_rpc_error(err, doing) from err
        finally:
            if took and delivered is not None:
                delivered()
            else:
                self.followed.changed(task_id)

    async def cancel(self, task_id: str, stamp: AuditStamp) -> None:
        handle = self._client.get_workflow_handle(task_id)
        try:
            # Who asked goes into the history first: a cancellation request carries no payload.
            await handle.signal(CANCEL_REQUESTED_SIGNAL, stamp, rpc_timeout=RPC_TIMEOUT)
            await handle.cancel(rpc_timeout=RPC_TIMEOUT)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:  # closed meanwhile: the ack stands
                raise from_rpc_error(err, "cancel the task") from err
        finally:
            self.followed.changed(task_id)
