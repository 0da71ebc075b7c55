"""How fast N approval workflows park, per workflow runner.

    .venv/bin/python -m bench.workflow_runner --tasks 300 --rounds 2
    .venv/bin/python -m bench.workflow_runner --tasks 300 --rounds 2 --user-module

One Temporal dev server on a temporary data dir; for each runner in turn (the SDK's default
sandbox, the sandbox with this project's `workflows` package passed through, the shipped
runner, which also passes the tool registry through, the unsandboxed runner), a worker on a
fresh task queue, N approvals started straight through the client (16 at a time), and the time
until every one shows `input_required` in its memo. The approval is the demo toolset's
`request_approval` (a workflow of `workflows/`), or with `--user-module` bench/user_tools.py's,
a workflow of a user's tool module. Rounds alternate the runners, so a machine whose load
changes meanwhile is shared out among them.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.worker import PASSED_THROUGH, workflow_runner
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.contracts.task_state import MEMO_KEY, TaskInput, TaskState, iso_timestamp
from mcp_tasks.settings import Settings

WORKFLOWS_ONLY = SandboxRestrictions.default.with_passthrough_modules(*PASSED_THROUGH)
RUNNERS: dict[str, WorkflowRunner] = {
    "sandbox (SDK default)": SandboxedWorkflowRunner(),
    "sandbox, workflows passed through": SandboxedWorkflowRunner(restrictions=WORKFLOWS_ONLY),
    "sandbox, + tool registry (shipped)": workflow_runner(),
    "unsandboxed": UnsandboxedWorkflowRunner(),
}


@dataclass(frozen=True)
class Approval:
    tool: str
    workflow: str
    modules: tuple[str, ...]


DEMO = Approval("request_approval", "RequestApproval", ())
USER = Approval("bench_user_approval", "BenchUserApproval", ("bench.user_tools",))


async def start_approval(client: Client, queue: str, approval: Approval) -> str:
    task_id = f"bench-{uuid.uuid4().hex}"
    task = TaskInput(
        task_id=task_id,
        tool=approval.tool,
        arguments={"message": "Ship it?"},
        created_at=iso_timestamp(datetime.now(UTC)),
        ttl_ms=None,
        poll_interval_ms=1000,
        owner="bench",
    )
    memo = TaskState.initial(task, "Queued").to_memo()
    await client.start_workflow(
        approval.workflow, task, id=task_id, task_queue=queue, memo={MEMO_KEY: memo}
    )
    return task_id


async def parked(client: Client, task_id: str) -> bool:
    description = await client.get_workflow_handle(task_id).describe()
    state = TaskState.from_memo(await description.memo_value(MEMO_KEY, None))
    return state is not None and state.status == "input_required"


async def park(
    client: Client, runner: WorkflowRunner, tasks: int, approval: Approval
) -> tuple[float, float]:
    """Seconds from the first start until all `tasks` approvals are parked, and the CPU
    seconds this process (the worker, and the client's starts and reads) spent meanwhile: the
    figure a loaded machine changes least."""
    queue = f"bench-{uuid.uuid4().hex}"
    registry = load_toolsets("demo", list(approval.modules), Settings())
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
                    return await start_approval(client, queue, approval)

            waiting = set(await asyncio.gather(*(gated() for _ in range(tasks))))
            while waiting:
                batch = list(waiting)[:100]
                states = await asyncio.gather(*(parked(client, t) for t in batch))
                done = [task_id for task_id, ok in zip(batch, states, strict=True) if ok]
                waiting.difference_update(done)
                await asyncio.sleep(0.2)  # reads at a fixed pace, alike for every runner
            # (They stay parked: the server's data dir goes when the run ends.)
            return time.perf_counter() - began, time.process_time() - cpu


async def run(tasks: int, rounds: int, approval: Approval) -> None:
    with tempfile.TemporaryDirectory() as data:
        server = TemporalDevServer(Path(data), port=free_port())
        server.start()
        try:
            await server.wait_ready()
            client = await Client.connect(server.address)
            for round_ in range(rounds):
                for name, runner in RUNNERS.items():
                    seconds, cpu = await park(client, runner, tasks, approval)
                    print(
                        f"round {round_ + 1}  {name:36s} {tasks} parked in {seconds:6.2f} s"
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
    parser.add_argument(
        "--user-module", action="store_true", help="park bench/user_tools.py's approval"
    )
    args = parser.parse_args()
    asyncio.run(run(args.tasks, args.rounds, USER if args.user_module else DEMO))


if __name__ == "__main__":
    main()
