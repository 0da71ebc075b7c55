"""What operations add to one request, measured in-process (docs/operations/observability.md):

    python -m bench.observability_overhead

the metrics of a request (`record_request`), and its JSON log line (`request_line` through the
JSON formatter to a stream in memory), each as microseconds per request; and, as a yardstick
of the machine's speed at the time, one `json.dumps` of the line's fields.
"""

from __future__ import annotations

import io
import json
import logging
import timeit
from collections.abc import Callable

from mcp_server.observability import metrics
from mcp_tasks.logging import JsonFormatter, request_line

FIELDS = {
    "requestId": "0123456789abcdef",
    "method": "tasks/get",
    "taskId": "mcp-task-" + "a" * 32,
    "principal": "b" * 32,
    "outcome": "ok",
    "status": 200,
    "durationMs": 9.51,
}


def per_call_us(job: Callable[[], object], number: int = 20_000) -> float:
    """The best of 5 runs: the machine is shared, and only the fastest run is the code."""
    return min(timeit.repeat(job, number=number, repeat=5)) / number * 1e6


def main() -> None:
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    counted = per_call_us(lambda: metrics.record_request("tasks/get", "ok", False, 0.0095))
    logged = per_call_us(lambda: request_line(FIELDS))
    yardstick = per_call_us(lambda: json.dumps(FIELDS, separators=(",", ":")))
    print(
        f"metrics: {counted:.1f} us per request; JSON log line: {logged:.1f} us per request; "
        f"yardstick json.dumps of its fields: {yardstick:.1f} us"
    )


if __name__ == "__main__":
    main()
