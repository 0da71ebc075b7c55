"""How long a worker that lost a quota workflow from its cache takes to replay it.

    python -m bench.quota_replay --cycles 170

Runs a throwaway Temporal dev server and a worker, makes `cycles` reservations of one principal
and releases each (about 7 history events a cycle), then replays the quota workflow's history
with the current code, as a worker does after an eviction, and prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Replayer, Worker

from activities import quota as quota_activities
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.tasks.quota import QuotaReservations
from workflows import quota
from workflows.secret_interceptor import SecretsInterceptor


async def measure(cycles: int) -> dict[str, float]:
    server = TemporalDevServer(Path(tempfile.mkdtemp(prefix="quota-replay-")), port=free_port())
    server.start()
    try:
        await server.wait_ready()
        client = await Client.connect(server.address)
        queue = "quota-replay"
        interceptors = [SecretsInterceptor()]
        async with Worker(
            client,
            task_queue=queue,
            workflows=quota.WORKFLOWS,
            activities=quota_activities.ACTIVITIES,
            interceptors=interceptors,
        ):
            reservations = QuotaReservations(client, queue)
            started = time.monotonic()
            for index in range(cycles):
                await reservations.reserve("owner", f"task-{index}", cycles + 1)
                await reservations.release("owner", f"task-{index}")
            cycling_s = time.monotonic() - started
            handle = client.get_workflow_handle(reservations.workflow_id("owner"))
            history = await handle.fetch_history()
        started = time.monotonic()
        replayer = Replayer(workflows=quota.WORKFLOWS, interceptors=interceptors)
        await replayer.replay_workflow(history)
        return {
            "cycles": cycles,
            "events_in_last_run": len(history.events),
            "reserve_and_release_s": round(cycling_s, 2),
            "replay_s": round(time.monotonic() - started, 2),
        }
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=170)
    print(json.dumps(asyncio.run(measure(parser.parse_args().cycles)), indent=2))


if __name__ == "__main__":
    main()
