"""What the operations routes ask of the task backend (observability/): whether it answers and
is set up (readiness, probes.py), how many workers poll this deployment's task queue, and the
running tasks by tool and status (the open-task gauges, visibility.py). Behind `TaskBackend`,
so that the probes and the gauges never hold a Temporal client; `TemporalBackend` asks
Temporal.

Rules implemented:
- A poller counts only while its `last_access_time` is recent: Temporal keeps listing a
  poller well after its worker died (see `pollers`).
- Every census query is limited to one task queue (`TaskQueue=`): another deployment in the
  same namespace has its own.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from mcp_server.tasks.memo import task_state_of
from mcp_server.tasks.timeouts import RPC_TIMEOUT
from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_STATUS, SEARCH_ATTRIBUTE_TOOL, TaskState
from mcp_tasks.contracts.task_status import TaskStatus

# A probe's calls: short, so that /readyz answers while a load balancer still waits.
PROBE_TIMEOUT = timedelta(seconds=2)


class TaskBackend(Protocol):
    # The namespace the tasks live in (the deployment gauge names it).
    namespace: str

    async def check_health(self) -> None: ...
    async def search_attributes(self) -> set[str]: ...
    async def pollers(self, task_queue: str, max_age: timedelta) -> tuple[int, int]: ...
    async def count_running(self, tool: str, status: TaskStatus, task_queue: str) -> int: ...
    async def running(
        self, status: TaskStatus, task_queue: str, started_before: datetime | None, limit: int
    ) -> list[TaskState]: ...


class TemporalBackend:
    def __init__(self, client: Client) -> None:
        self._client = client
        self.namespace = client.namespace

    async def check_health(self) -> None:
        """Temporal answers its health check (raises whatever the call raised otherwise)."""
        await self._client.service_client.check_health(timeout=PROBE_TIMEOUT)

    async def search_attributes(self) -> set[str]:
        """The custom search attributes the namespace has."""
        listed = await self._client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=self.namespace), timeout=PROBE_TIMEOUT
        )
        return set(listed.custom_attributes)

    async def pollers(self, task_queue: str, max_age: timedelta) -> tuple[int, int]:
        """For the workers gauge (visibility.py): Temporal keeps listing a poller well after its
        worker died, so a worker counts only while its poller's `last_access_time` is recent (a
        live worker polls again at least once per long poll, Temporal's
        `matching.longPollExpirationInterval`, 1 min by default; MCP_TASKS_READY_POLLER_MAX_AGE_S,
        75 s, is that plus a margin). Returns (workflow pollers of `task_queue` seen within
        `max_age`, pollers listed but older)."""
        response = await self._client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=self.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            ),
            timeout=PROBE_TIMEOUT,
        )
        oldest = datetime.now(UTC) - max_age
        live = sum(
            1
            for poller in response.pollers
            if poller.HasField("last_access_time")
            and poller.last_access_time.ToDatetime(UTC) >= oldest
        )
        return live, len(response.pollers) - live

    async def count_running(self, tool: str, status: TaskStatus, task_queue: str) -> int:
        """How many running tasks of `tool` published `status` (Temporal counts cannot GROUP BY
        a custom search attribute: one count per tool and status)."""
        query = (
            f'{SEARCH_ATTRIBUTE_TOOL}="{tool}" AND {SEARCH_ATTRIBUTE_STATUS}="{status}" '
            f'AND ExecutionStatus="Running" AND TaskQueue="{task_queue}"'
        )
        return (await self._client.count_workflows(query, rpc_timeout=RPC_TIMEOUT)).count

    async def running(
        self, status: TaskStatus, task_queue: str, started_before: datetime | None, limit: int
    ) -> list[TaskState]:
        """The memos of at most `limit` running tasks that published `status`, started before
        `started_before` when given (what the visibility store can filter on)."""
        query = (
            f'{SEARCH_ATTRIBUTE_STATUS}="{status}" AND TaskQueue="{task_queue}" '
            'AND ExecutionStatus="Running"'
        )
        if started_before is not None:
            query += f' AND StartTime < "{started_before:%Y-%m-%dT%H:%M:%SZ}"'
        states: list[TaskState] = []
        async for execution in self._client.list_workflows(
            query, limit=limit, page_size=1000, rpc_timeout=RPC_TIMEOUT
        ):
            state = await task_state_of(execution)
            if state is not None:
                states.append(state)
        return states
