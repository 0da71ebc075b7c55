"""bench/unit_costs.py reads Temporal's own counters: a frontend request is kept apart from the
same request counted again by the history service, and persistence requests are summed."""

from __future__ import annotations

import httpx

from bench.unit_costs import counters

METRICS = """\
# TYPE service_requests counter
service_requests{namespace="ns",operation="DescribeWorkflowExecution",service_name="frontend"} 7
service_requests{namespace="ns",operation="DescribeWorkflowExecution",service_name="history"} 7
service_requests{namespace="other",operation="DescribeWorkflowExecution",service_name="frontend"} 2
persistence_requests{operation="GetWorkflowExecution",service_name="history"} 5
persistence_requests{operation="UpdateWorkflowExecution",service_name="history"} 1.0e+01
service_latency_count{operation="DescribeWorkflowExecution",service_name="frontend"} 99
"""


async def test_requests_are_counted_by_service_and_operation_and_persistence_in_all() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, text=METRICS))
    async with httpx.AsyncClient(transport=transport) as http:
        totals = await counters(http, "http://temporal.test/metrics")
    assert dict(totals) == {
        "frontend:DescribeWorkflowExecution": 9,
        "history:DescribeWorkflowExecution": 7,
        "persistence": 15,
    }
