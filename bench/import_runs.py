"""What continue-as-new does to a long import's history: runs, events per run, replay time.

    python -m bench.import_runs --rows 10000 --chunk-size 10 --chunks-per-run 200 100000

Runs a throwaway Temporal dev server and a worker (the demo toolset), imports a CSV of `rows`
rows in chunks of `chunk_size` once per `--chunks-per-run` value (100000: never continues as
new), and prints, for each, the runs the task took, the events of its longest run, the wall
time of the import, and how long a worker that lost the task from its cache takes to replay
that run (Replayer), as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.worker import build_worker
from mcp_server.tasks.store import TemporalTaskStore, new_task_id
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.contracts.task_state import TaskInput, iso_timestamp
from mcp_tasks.settings import Settings
from workflows.secret_interceptor import SecretsInterceptor


async def _histories(client: Client, task_id: str) -> list[WorkflowHistory]:
    """Every run's history, first to last."""
    handle = client.get_workflow_handle(task_id)
    described = await handle.describe()
    run_id = described.raw_description.workflow_execution_info.first_run_id
    runs: list[WorkflowHistory] = []
    while run_id:
        history = await client.get_workflow_handle(task_id, run_id=run_id).fetch_history()
        runs.append(history)
        last = history.events[-1]
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return runs


async def _one(
    client: Client, settings: Settings, source: str, chunk_size: int, per_run: int
) -> dict[str, Any]:
    store = TemporalTaskStore(client, settings.task_queue)
    task = TaskInput(
        task_id=new_task_id(),
        tool="import_records",
        arguments={
            "source": source,
            "database": f"{uuid.uuid4().hex}.db",
            "table": "rows",
            "key": "id",
            "chunk_size": chunk_size,
        },
        created_at=iso_timestamp(datetime.now(UTC)),
        ttl_ms=None,
        poll_interval_ms=1000,
        owner="bench",
        tool_config={"chunks_per_run": per_run},
    )
    started = time.monotonic()
    await store.create(task, "ImportRecords")
    result = await client.get_workflow_handle(task.task_id).result()
    import_s = time.monotonic() - started
    runs = await _histories(client, task.task_id)
    longest = max(runs, key=lambda history: len(history.events))
    registry = load_toolsets("demo", [], settings)
    replayer = Replayer(workflows=registry.workflows, interceptors=[SecretsInterceptor()])
    started = time.monotonic()
    await replayer.replay_workflow(longest)
    return {
        "chunks_per_run": per_run,
        "imported": result["structuredContent"]["imported"],
        "runs": len(runs),
        "events_in_longest_run": len(longest.events),
        "import_s": round(import_s, 1),
        "replay_longest_run_s": round(time.monotonic() - started, 2),
    }


async def measure(rows: int, chunk_size: int, per_runs: list[int]) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="import-runs-"))
    server = TemporalDevServer(base / "temporal", port=free_port())
    server.start()
    try:
        await server.wait_ready()
        client = await Client.connect(server.address)
        imports = base / "imports"
        imports.mkdir()
        source = "rows.csv"
        lines = ["id,name"] + [f"{i},name {i}" for i in range(1, rows + 1)]
        (imports / source).write_text("\n".join(lines) + "\n")
        settings = Settings(task_queue="import-runs", import_dir=str(imports))
        registry = load_toolsets("demo", [], settings)
        worker = build_worker(client, settings, registry)
        running = asyncio.create_task(worker.run())
        try:
            results = [await _one(client, settings, source, chunk_size, n) for n in per_runs]
        finally:
            await worker.shutdown()
            await running
        return {"rows": rows, "chunk_size": chunk_size, "results": results}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--chunk-size", type=int, default=10)
    parser.add_argument("--chunks-per-run", type=int, nargs="+", default=[200, 100000])
    args = parser.parse_args()
    figures = asyncio.run(measure(args.rows, args.chunk_size, args.chunks_per_run))
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
