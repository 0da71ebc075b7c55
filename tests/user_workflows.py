"""Stand-ins for "the user's" existing workflows: plain Temporal code that knows nothing of MCP."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

USERS_TASK_QUEUE = "tests-users-own-workers"
# A task queue no worker ever polls.
NOBODY_POLLS_QUEUE = "tests-nobody-polls-this-queue"


@workflow.defn(name="TestsPlaceOrder")
class PlaceOrder:
    @workflow.run
    async def run(self, order: dict[str, Any]) -> dict[str, Any]:
        if order.get("fail"):
            raise ApplicationError("card declined", non_retryable=True)
        await workflow.sleep(timedelta(seconds=float(order.get("seconds", 0))))
        return {"receipt": {"id": f"r-{order['item']}", "item": order["item"]}, "internal": 1}


@workflow.defn(name="TestsAddNumbers")
class AddNumbers:
    @workflow.run
    async def run(self, a: int, b: int) -> int:
        return a + b


EXPOSED_TOML = f"""
[[tools]]
name = "place_order"
description = "Places an order with the users' own workflow."
workflow = "TestsPlaceOrder"
task_queue = "{USERS_TASK_QUEUE}"
result_path = "receipt"
input_schema = {{ type = "object", properties = {{ item = {{ type = "string" }}, fail = {{ type = "boolean" }}, seconds = {{ type = "number" }} }}, required = ["item"] }}

[[tools]]
name = "add_numbers"
workflow = "TestsAddNumbers"
task_queue = "{USERS_TASK_QUEUE}"
positional = ["a", "b"]
input_schema = {{ type = "object", properties = {{ a = {{ type = "integer" }}, b = {{ type = "integer" }} }} }}

[[tools]]
name = "unserved_order"
description = "The users' workflow on a task queue no worker polls."
workflow = "TestsPlaceOrder"
task_queue = "{NOBODY_POLLS_QUEUE}"
no_worker_wait_seconds = 1
cancel_wait_seconds = 2

[[tools]]
name = "misspelt_order"
description = "A workflow type the users' worker does not register (a misspelling)."
workflow = "TestsPlaceOrdr"
task_queue = "{USERS_TASK_QUEUE}"
no_worker_wait_seconds = 1
cancel_wait_seconds = 2
"""
