"""Why an exposed workflow (the user's workflow, run as a child of its task) has not started.

`probe_child` looks, from outside the workflow, at what only Temporal knows:
- whether the child has ever completed a workflow task (then it runs: nothing to say);
- whether any worker polls its task queue (`DescribeTaskQueue`, workflow pollers): none is
  "no worker polls task queue X";
- whether its workflow tasks fail (a type no worker registers, a bug in the user's code): the
  last failure's message, as the user's worker reported it.
It only reads. Errors from Temporal fail the attempt (retried), so nothing is said on a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import activity
from temporalio.api.enums.v1 import EventType, TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import WorkflowExecutionStatus

PROBE_CHILD_ACTIVITY = "mcp_tasks.probe_child"
# How many history events to read looking for the child's first completed workflow task.
MAX_EVENTS_READ = 200


@dataclass
class ChildProbe:
    workflow_id: str
    workflow_type: str
    task_queue: str


@dataclass
class ChildHealth:
    # True once the child has completed a workflow task (or has already closed).
    started: bool
    # Why it has not started, in a sentence; None when it has, or when nothing is wrong yet.
    problem: str | None = None


@activity.defn(name=PROBE_CHILD_ACTIVITY)
async def probe_child(probe: ChildProbe) -> ChildHealth:
    client = activity.client()
    handle = client.get_workflow_handle(probe.workflow_id)
    description = await handle.describe()
    if description.status != WorkflowExecutionStatus.RUNNING:
        return ChildHealth(started=True)
    last_failure: str | None = None
    read = 0
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            return ChildHealth(started=True)
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            failure = event.workflow_task_failed_event_attributes.failure
            last_failure = failure.message or "its workflow task failed"
        read += 1
        if read >= MAX_EVENTS_READ:
            break
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=probe.task_queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    pollers = (await client.workflow_service.describe_task_queue(request)).pollers
    if not pollers:
        return ChildHealth(started=False, problem=f"no worker polls task queue {probe.task_queue}")
    if last_failure is not None:
        return ChildHealth(
            started=False,
            problem=(
                f"the workers polling task queue {probe.task_queue} cannot run "
                f"{probe.workflow_type}: {last_failure[:300]}"
            ),
        )
    return ChildHealth(started=False)


ACTIVITIES = [probe_child]
