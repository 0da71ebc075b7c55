"""How fast N `request_approval` workflows park, per workflow runner (issue 11 item 5).

    .venv/bin/python -m bench.workflow_runner --tasks 300 --rounds 2

One Temporal dev server on a temporary data dir; for each runner in turn (the SDK's default
sandbox, the sandbox with this project's `workflows` package passed through as the worker
runs it, the unsandboxed runner), a worker of the demo toolset on a fresh task queue, N
approvals started straight through the client (16 at a time), and the time until every one
shows `input_required` in its memo. Rounds alternate the runners, so a machine whose load
changes meanwhile is shared out among them.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from mcp_server.runtime.config import Settings
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.worker import workflow_runner
from mcp_server.tools.loading import load_toolsets
from workflows.task_state import MEMO_KEY, TaskInput, TaskState, iso_timestamp

RUNNERS: dict[str, WorkflowRunner] = {
    "sandbox (SDK default)": SandboxedWorkflowRunner(),
    "sandbox, workflows passed through (shipped)": workflow_runner(),
    "unsandboxed": UnsandboxedWorkflowRunner(),
}


async def start_approval(client: Client, queue: str) -> str:
    task_id = f"bench-{uuid.uuid4().hex}"
    task = TaskInput(
        task_id=task_id,
        tool="request_approval",
        arguments={"message": "Ship it?"},
        created_at=iso_timestamp(datetime.now(UTC)),
        ttl_ms=None,
        poll_interval_ms=1000,
        owner="bench",
    )
    memo = TaskState.initial(task, "Queued").to_memo()
    await client.start_workflow(
        "RequestApproval", task, id=task_id, task_queue=queue, memo={MEMO_KEY: memo}
    )
    return task_id


async def parked(client: Client, task_id: str) -> bool:
    description = await client.get_workflow_handle(task_id).describe()
    state = TaskState.from_memo(await description.memo_value(MEMO_KEY, None))
    return state is not None and state.status == "input_required"


async def park(client: Client, runner: WorkflowRunner, tasks: int) -> tuple[float, float]:
    """Seconds from the first start until all `tasks` approvals are parked, and the CPU
    seconds this process (the worker, and the client's starts and reads) spent meanwhile: the
    figure a loaded machine changes least."""
    queue = f"bench-{uuid.uuid4().hex}"
    registry = load_toolsets("demo", [], Settings())
    with ThreadPoolExecutor(8) as pool:
        worker = Worker(
            client,
            task_queue=queue,
            workflows=registry.workflows,
            activities=registry.activities,
            activity_executor=pool,
            workflow_runner=runner,
            max_cached_workflows=max(1000, tasks),
        )
        async with worker:
            began, cpu = time.perf_counter(), time.process_time()
            gate = asyncio.Semaphore(16)

            async def gated() -> str:
                async with gate:
                    return await start_approval(client, queue)

            waiting = set(await asyncio.gather(*(gated() for _ in range(tasks))))
            while waiting:
                batch = list(waiting)[:100]
                states = await asyncio.gather(*(parked(client, t) for t in batch))
                done = [task_id for task_id, ok in zip(batch, states, strict=True) if ok]
                waiting.difference_update(done)
                await asyncio.sleep(0.2)  # reads at a fixed pace, alike for every runner
            # (They stay parked: the server's data dir goes when the run ends.)
            return time.perf_counter() - began, time.process_time() - cpu


async def run(tasks: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as data:
        server = TemporalDevServer(Path(data), port=free_port())
        server.start()
        try:
            await server.wait_ready()
            client = await Client.connect(server.address)
            for round_ in range(rounds):
                for name, runner in RUNNERS.items():
                    seconds, cpu = await park(client, runner, tasks)
                    print(
                        f"round {round_ + 1}  {name:44s} {tasks} parked in {seconds:6.2f} s"
                        f"  ({tasks / seconds:5.1f}/s), worker process CPU {cpu:6.2f} s"
                        f"  ({1000 * cpu / tasks:5.1f} ms per approval)",
                        flush=True,
                    )
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(run(args.tasks, args.rounds))


if __name__ == "__main__":
    main()
