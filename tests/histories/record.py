"""Record the histories `tests/workflows/test_task_state.py` replays: every demo workflow and every
task workflow of the conformance toolset, at the states that matter (waiting, mid step, answered,
expired, cancelled), from a real run of the code checked out now.

    export PYTHONPATH=sdk/python/src  # the teams' helper, which exposed_interactive_* use
    .venv/bin/python -m tests.histories.record                    # all of them
    .venv/bin/python -m tests.histories.record deploy_mid_step    # only these
    .venv/bin/python -m tests.histories.record --out /tmp/h        # elsewhere

It starts the stack it records against, as the tests do: a Temporal dev server on a temporary
data dir, the MCP server on 127.0.0.1 and a worker with the test registry; drives each scenario
over MCP HTTP (tools/call, tasks/update, tasks/cancel); and writes each task's history
(`client.fetch_workflow_history(taskId).to_json()`) to tests/histories/NAME.json. A "waiting"
history is taken while its task is still open, once its state is published (the memo changes
in the same workflow task as the commands before it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from mcp_server.http.handshake import session_digest
from mcp_server.protocol.frame import errors
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.identity import ANONYMOUS
from mcp_tasks.settings import Settings
from tests.client_2025 import Client2025
from tests.conftest import Stack, running_stack
from tests.interactive_children import AskTwice
from tests.mcp_client import TASKS, TASKS_AND_ELICITATION
from tests.user_workflows import EXPOSED_TOML, USERS_TASK_QUEUE, AddNumbers, PlaceOrder
from workflows.quota import quota_workflow_id
from workflows.session_tasks import session_tasks_workflow_id

HISTORIES = Path(__file__).parent
ACCEPT_APPROVE = {"action": "accept", "content": {"approve": True}}
SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "Hi from the model"},
    "model": "test-model",
    "stopReason": "endTurn",
}
GATED = """
[[steps]]
name = "build"
run = "true"
rollback = "true"
[[steps]]
name = "switch"
run = "true"
approval = "Switch traffic?"
"""
# A gate someone else decides (auth none: the recorder is every approver).
GATED_FOR_APPROVERS = GATED + 'approvers = ["release-manager", "scope:release"]\n'
INTERACTIVE_TOML = f"""
[[tools]]
name = "ask_twice"
workflow = "TestsAskTwice"
task_queue = "{USERS_TASK_QUEUE}"
"""
SLOW_SECOND_STEP = """
[[steps]]
name = "build"
run = "true"
rollback = "true"
[[steps]]
name = "migrate"
run = "sleep 60"
"""


class Recorder:
    def __init__(self, stack: Stack, files: Path, out: Path) -> None:
        self.stack, self.mcp, self.files, self.out = stack, stack.mcp, files, out

    async def save(self, name: str, task_id: str) -> None:
        history = await self.stack.client.get_workflow_handle(task_id).fetch_history()
        path = self.out / f"{name}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(history.to_json())
        print(f"{name}: {len(history.events)} events")

    async def start(
        self, tool: str, arguments: dict[str, Any], capabilities: dict[str, Any] | None = None
    ) -> str:
        reply = await self.mcp.call_tool(
            tool, arguments, capabilities=capabilities or TASKS_AND_ELICITATION
        )
        assert reply.result.get("resultType") == "task", reply.body
        return str(reply.result["taskId"])

    async def waiting(self, task_id: str) -> dict[str, Any]:
        return await self.mcp.wait_status(task_id, "input_required", within=30)

    async def message(self, task_id: str, part: str) -> None:
        await self.mcp.wait_for(task_id, lambda t: part in (t.get("statusMessage") or ""), 30)

    async def answer(self, task_id: str, responses: dict[str, Any]) -> None:
        assert "error" not in (await self.mcp.update_task(task_id, responses)).body

    async def finish(self, name: str, task_id: str) -> None:
        await self.mcp.wait_terminal(task_id, within=60)
        await self.save(name, task_id)

    async def steering(self, verb: str, task_id: str, **params: Any) -> None:
        """A steering method (mcp-tasks-temporal/steer, pause, resume) of the task."""
        capabilities = {
            **TASKS_AND_ELICITATION,
            "extensions": {**TASKS["extensions"], "mcp-tasks-temporal/steering": {}},
        }
        reply = await self.mcp.rpc(
            f"mcp-tasks-temporal/{verb}",
            {"taskId": task_id, **params},
            capabilities=capabilities,
            headers={"Mcp-Name": task_id},
        )
        assert "error" not in reply.body, reply.body

    async def cancel(self, task_id: str) -> None:
        assert "error" not in (await self.mcp.cancel_task(task_id)).body

    def pipeline(self, name: str, steps: str) -> str:
        (self.files / "pipelines" / f"{name}.toml").write_text(steps)
        return name

    def csv(self, name: str, rows: int) -> str:
        lines = ["id,name"] + [f"{i},person {i}" for i in range(1, rows + 1)]
        (self.files / "imports" / name).write_text("\n".join(lines) + "\n")
        return name


# ----- the scenarios: NAME -> what leads to that history ---------------------------------------


async def deploy_waiting_approval(r: Recorder) -> None:
    task_id = await r.start("deploy", {"pipeline": r.pipeline("gated-waiting", GATED)})
    await r.waiting(task_id)
    await r.save("deploy_waiting_approval", task_id)
    await r.cancel(task_id)


async def deploy_approvers_approved(r: Recorder) -> None:
    steps = r.pipeline("gated-approvers", GATED_FOR_APPROVERS)
    task_id = await r.start("deploy", {"pipeline": steps}, TASKS)
    key = next(iter((await r.waiting(task_id))["inputRequests"]))
    await r.answer(task_id, {key: ACCEPT_APPROVE})
    await r.finish("deploy_approvers_approved", task_id)


async def deploy_mid_step(r: Recorder) -> None:
    task_id = await r.start("deploy", {"pipeline": r.pipeline("slow-mid", SLOW_SECOND_STEP)})
    await r.message(task_id, '"migrate": running')
    await r.save("deploy_mid_step", task_id)
    await r.cancel(task_id)


async def deploy_approved_completed(r: Recorder) -> None:
    task_id = await r.start("deploy", {"pipeline": r.pipeline("gated-done", GATED)})
    key = next(iter((await r.waiting(task_id))["inputRequests"]))
    await r.answer(task_id, {key: ACCEPT_APPROVE})
    await r.finish("deploy_approved_completed", task_id)


async def deploy_cancelled_rolled_back(r: Recorder) -> None:
    task_id = await r.start("deploy", {"pipeline": r.pipeline("slow-cancel", SLOW_SECOND_STEP)})
    await r.message(task_id, '"migrate": running')
    await r.cancel(task_id)
    await r.finish("deploy_cancelled_rolled_back", task_id)


async def approval_waiting(r: Recorder) -> None:
    task_id = await r.start("request_approval", {"message": "Ship it?"})
    await r.waiting(task_id)
    await r.save("approval_waiting", task_id)
    await r.cancel(task_id)


async def approval_approved(r: Recorder) -> None:
    task_id = await r.start("request_approval", {"message": "Ship it?", "require_reason": True})
    await r.waiting(task_id)
    content = {"decision": "approve", "reason": "tests pass"}
    await r.answer(task_id, {"decision": {"action": "accept", "content": content}})
    await r.finish("approval_approved", task_id)


async def approval_approvers_decided(r: Recorder) -> None:
    arguments = {"message": "Ship it?", "approvers": ["release-manager", "scope:release"]}
    task_id = await r.start("request_approval", arguments, TASKS)
    await r.waiting(task_id)
    await r.answer(task_id, {"decision": {"action": "accept", "content": {"decision": "approve"}}})
    await r.finish("approval_approvers_decided", task_id)


async def approval_timed_out(r: Recorder) -> None:
    task_id = await r.start("request_approval", {"message": "Ship it?", "deadline_seconds": 1})
    await r.finish("approval_timed_out", task_id)


async def _notifying(r: Recorder, scenario: Callable[[Recorder], Awaitable[None]]) -> None:
    """`scenario` on a stack of its own whose tasks notify a webhook endpoint (of every event;
    a closed port: the deliveries' retries are not in the task's history)."""
    hooks = r.files / "webhooks.json"
    endpoint = {
        "id": "ops",
        "url": "http://127.0.0.1:9/hook",
        "secret": "s" * 16,
        "events": ["input_required", "completed", "failed", "cancelled"],
    }
    hooks.write_text(json.dumps([endpoint]))
    async with running_stack(r.stack.client, r.stack.registry, webhooks_file=str(hooks)) as stack:
        await scenario(Recorder(stack, r.files, r.out))


async def approval_notified(r: Recorder) -> None:
    async def scenario(n: Recorder) -> None:
        task_id = await n.start("request_approval", {"message": "Ship it?"})
        await n.waiting(task_id)
        await n.answer(task_id, {"decision": _accept(decision="approve")})
        await n.finish("approval_notified", task_id)

    await _notifying(r, scenario)


async def approval_notified_cancelled(r: Recorder) -> None:
    async def scenario(n: Recorder) -> None:
        task_id = await n.start("request_approval", {"message": "Ship it?"})
        await n.waiting(task_id)
        await n.cancel(task_id)
        await n.finish("approval_notified_cancelled", task_id)

    await _notifying(r, scenario)


async def quota_refused_then_released(r: Recorder) -> None:
    """A principal's quota workflow (workflows/quota.py), limit 2: two reservations, a refusal
    that runs the reclaim, a release as a task closes, a reservation on the freed slot."""
    limited = running_stack(r.stack.client, r.stack.registry, max_open_tasks_per_principal=2)
    async with limited as stack:
        mcp = stack.mcp
        first, second = [await mcp.create_task("tests_wait_forever") for _ in range(2)]
        refused = await mcp.call_tool("tests_wait_forever")
        assert refused.error["code"] == errors.QUOTA_EXCEEDED, refused
        await mcp.cancel_task(first)
        await mcp.wait_terminal(first)
        third = await mcp.create_task("tests_wait_forever")
        quota = quota_workflow_id(stack.settings.task_queue, ANONYMOUS.digest)
        await Recorder(stack, r.files, r.out).save("quota/refused_then_released", quota)
        for task_id in (second, third):
            await mcp.cancel_task(task_id)


async def quota_lazy_slot(r: Recorder) -> None:
    """Limit 8: a task on a lazy slot (granted below an eighth of the limit) that closes with no
    release, and the quota workflow that finds it closed before refusing the 8th create."""
    limited = running_stack(r.stack.client, r.stack.registry, max_open_tasks_per_principal=8)
    async with limited as stack:
        mcp, recorder = stack.mcp, Recorder(stack, r.files, r.out)
        lazy = await recorder.start("confirm_delete", {"filename": "lazy.txt"})
        await recorder.waiting(lazy)
        await recorder.answer(lazy, {"confirm": _accept(confirm=True)})
        await recorder.finish("release_lazily/conformance_confirm_delete", lazy)
        waiting = [await mcp.create_task("tests_wait_forever") for _ in range(8)]
        quota = quota_workflow_id(stack.settings.task_queue, ANONYMOUS.digest)
        await recorder.save("quota/lazy_slot_checked_before_refusing", quota)
        for task_id in waiting:
            await mcp.cancel_task(task_id)


async def session_tasks_listed(r: Recorder) -> None:
    """A 2025-11-25 session's task list (workflows/session_tasks.py): the session creates two
    tasks, each signalled to its list (signal-with-start, then a signal)."""
    client = Client2025(r.stack.http, r.stack.url)
    await client.initialize()
    assert client.session_id is not None
    call = {"name": "tests_wait_forever", "arguments": {}, "task": {}}
    created = [(await client.request("tools/call", call)).result["task"]["taskId"] for _ in "ab"]
    digest = session_digest(client.session_id)
    listed = session_tasks_workflow_id(r.stack.settings.task_queue, digest)
    await _workflow_tasks_completed(r.stack.client, listed, 2)
    await r.save("session_tasks/two_tasks_listed", listed)
    for task_id in created:
        await r.mcp.cancel_task(task_id)


async def _workflow_tasks_completed(client: Client, workflow_id: str, count: int) -> None:
    """Until `workflow_id`'s history has `count` completed workflow tasks (bounded)."""
    handle = client.get_workflow_handle(workflow_id)
    async with asyncio.timeout(20):
        while True:
            events = (await handle.fetch_history()).events
            if sum(e.HasField("workflow_task_completed_event_attributes") for e in events) >= count:
                return
            await asyncio.sleep(0.1)


def _import_arguments(source: str, table: str, delay_ms: int) -> dict[str, Any]:
    return {
        "source": source,
        "database": "people.db",
        "table": table,
        "key": "id",
        "chunk_size": 10,
        "chunk_delay_ms": delay_ms,
    }


async def import_mid_import(r: Recorder) -> None:
    source = r.csv("mid.csv", 30)
    task_id = await r.start("import_records", _import_arguments(source, "mid", 60_000))
    await r.message(task_id, "10 / 30 rows")
    await r.save("import_mid_import", task_id)
    await r.cancel(task_id)


async def import_completed(r: Recorder) -> None:
    source = r.csv("done.csv", 30)
    task_id = await r.start("import_records", _import_arguments(source, "done", 100))
    await r.finish("import_completed", task_id)


async def import_cancelled(r: Recorder) -> None:
    source = r.csv("cancel.csv", 30)
    task_id = await r.start("import_records", _import_arguments(source, "cancel", 60_000))
    await r.message(task_id, "10 / 30 rows")
    await r.cancel(task_id)
    await r.finish("import_cancelled", task_id)


async def multi_step_job_approved(r: Recorder) -> None:
    arguments = {"steps": 2, "step_seconds": 0.2, "require_approval": True}
    task_id = await r.start("multi_step_job", arguments)
    await r.waiting(task_id)
    await r.answer(task_id, {"approve": ACCEPT_APPROVE})
    await r.finish("multi_step_job_approved", task_id)


async def multi_step_job_steered(r: Recorder) -> None:
    # Steering (workflows/steering.py): paused while it waits, steered twice, held at its
    # first safe point, resumed.
    arguments = {"steps": 2, "step_seconds": 0.2, "require_approval": True}
    task_id = await r.start("multi_step_job", arguments)
    await r.waiting(task_id)
    await r.steering("pause", task_id)
    await r.steering("steer", task_id, message="use the blue pool")
    await r.steering("steer", task_id, message="then drain the green one")
    await r.answer(task_id, {"approve": ACCEPT_APPROVE})
    await r.message(task_id, "Paused:")
    await r.steering("resume", task_id)
    await r.finish("multi_step_job_steered", task_id)


async def deploy_gate_waits_without_elicitation(r: Recorder) -> None:
    # The caller cannot show the form: the gate waits (PARK_PATCH) and is answered elsewhere.
    name = r.pipeline("parked", GATED)
    task_id = await r.start("deploy", {"pipeline": name}, TASKS)
    await r.waiting(task_id)
    await r.answer(task_id, {"approve-switch": ACCEPT_APPROVE})
    await r.finish("deploy_gate_waits_without_elicitation", task_id)


async def exposed_place_order(r: Recorder) -> None:
    # ExposedWorkflow: a user's own workflow (tests/user_workflows.py) run as a child.
    task_id = await r.start("place_order", {"item": "book", "seconds": 0.5})
    await r.finish("exposed_place_order", task_id)


async def exposed_place_order_running(r: Recorder) -> None:
    # Open while the child runs (a task of the watch, before the interactive contract).
    task_id = await r.start("place_order", {"item": "slow", "seconds": 60})
    await r.message(task_id, "running TestsPlaceOrder")
    await _workflow_tasks_completed(r.stack.client, task_id, 2)
    await r.save("exposed_place_order_running", task_id)
    await r.cancel(task_id)


async def exposed_place_order_cancelled(r: Recorder) -> None:
    task_id = await r.start("place_order", {"item": "slow", "seconds": 60})
    await r.message(task_id, "running TestsPlaceOrder")
    await r.cancel(task_id)
    await r.finish("exposed_place_order_cancelled", task_id)


async def exposed_interactive_approved(r: Recorder) -> None:
    # A child speaking the interactive contract (tests/interactive_children.py): it reports,
    # asks twice under the same key (renamed approve-2 for the client), and completes.
    task_id = await r.start("ask_twice", {})
    await r.mcp.wait_for(task_id, lambda t: "approve" in t.get("inputRequests", {}), 30)
    await r.answer(task_id, {"approve": ACCEPT_APPROVE})
    await r.mcp.wait_for(task_id, lambda t: "approve-2" in t.get("inputRequests", {}), 30)
    await r.answer(task_id, {"approve-2": ACCEPT_APPROVE})
    await r.finish("exposed_interactive_approved", task_id)


async def exposed_place_order_failed(r: Recorder) -> None:
    task_id = await r.start("place_order", {"item": "x", "fail": True})
    await r.finish("exposed_place_order_failed", task_id)


def _conformance(
    tool: str,
    arguments: dict[str, Any],
    answers: dict[str, Any] | None = None,
    capabilities: dict[str, Any] | None = None,
) -> Callable[[Recorder], Awaitable[None]]:
    """A conformance tool's task, answered with `answers` if it asks, run to its end."""

    async def scenario(r: Recorder) -> None:
        task_id = await r.start(tool, arguments, capabilities)
        if answers is not None:
            await r.waiting(task_id)
            await r.answer(task_id, answers)
        await r.finish(f"conformance_{tool}", task_id)

    return scenario


async def conformance_confirm_delete_waiting(r: Recorder) -> None:
    task_id = await r.start("confirm_delete", {"filename": "a.txt"})
    await r.waiting(task_id)
    await r.save("conformance_confirm_delete_waiting", task_id)
    await r.cancel(task_id)


async def conformance_test_tool_with_task(r: Recorder) -> None:
    first = (await r.mcp.call_tool("test_tool_with_task")).result
    name = {"name": {"action": "accept", "content": {"name": "Alice"}}}
    extra = {"inputResponses": name, "requestState": first["requestState"]}
    created = (await r.mcp.call_tool("test_tool_with_task", extra=extra)).result
    await r.finish("conformance_test_tool_with_task", str(created["taskId"]))


def _accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


SCENARIOS: dict[str, Callable[[Recorder], Awaitable[None]]] = {
    scenario.__name__: scenario
    for scenario in (
        deploy_waiting_approval,
        deploy_mid_step,
        deploy_approved_completed,
        deploy_approvers_approved,
        deploy_cancelled_rolled_back,
        approval_waiting,
        approval_approved,
        approval_approvers_decided,
        approval_timed_out,
        approval_notified,
        approval_notified_cancelled,
        import_mid_import,
        import_completed,
        import_cancelled,
        multi_step_job_approved,
        multi_step_job_steered,
        deploy_gate_waits_without_elicitation,
        exposed_place_order,
        exposed_place_order_running,
        exposed_place_order_cancelled,
        exposed_place_order_failed,
        exposed_interactive_approved,
        conformance_confirm_delete_waiting,
        conformance_test_tool_with_task,
        quota_refused_then_released,
        quota_lazy_slot,
        session_tasks_listed,
    )
}
SCENARIOS |= {
    "conformance_slow_compute": _conformance("slow_compute", {"seconds": 0.5, "label": "pi"}),
    "conformance_failing_job": _conformance("failing_job", {}),
    "conformance_protocol_error_job": _conformance("protocol_error_job", {}),
    "conformance_confirm_delete": _conformance(
        "confirm_delete", {"filename": "a.txt"}, {"confirm": _accept(confirm=True)}
    ),
    "conformance_multi_input": _conformance(
        "multi_input", {}, {"name": _accept(name="Alice"), "confirm": _accept(confirm=True)}
    ),
    "conformance_test_sampling": _conformance(
        "test_sampling", {"prompt": "Say hi"}, {"sample": SAMPLED}, {**TASKS, "sampling": {}}
    ),
    "conformance_test_elicitation": _conformance(
        "test_elicitation",
        {"message": "Who are you?"},
        {"info": _accept(username="alice", email="alice@example.com")},
    ),
    "conformance_test_elicitation_sep1034_defaults": _conformance(
        "test_elicitation_sep1034_defaults", {}, {"profile": _accept(name="John Doe", age=30)}
    ),
    "conformance_test_elicitation_sep1330_enums": _conformance(
        "test_elicitation_sep1330_enums", {}, {"choices": _accept(untitledSingle="option1")}
    ),
}


async def record(names: list[str], out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="record-histories-") as scratch:
        files = Path(scratch)
        for directory in ("temporal", "pipelines", "imports"):
            (files / directory).mkdir()
        temporal = TemporalDevServer(files / "temporal", port=free_port())
        temporal.start()
        try:
            await temporal.wait_ready()
            client = await Client.connect(temporal.address)
            (files / "exposed.toml").write_text(EXPOSED_TOML + INTERACTIVE_TOML)
            overrides: dict[str, Any] = {
                "pipelines_dir": str(files / "pipelines"),
                "import_dir": str(files / "imports"),
                "exposed_workflows_file": str(files / "exposed.toml"),
            }
            # The registry of the tests' `registry` fixture (tests/conftest.py).
            modules = ["mcp_server.tools.demo", "tests.fixture_tools"]
            registry = load_toolsets("conformance", modules, Settings().with_(**overrides))
            users = [PlaceOrder, AddNumbers, AskTwice]
            async with (
                Worker(client, task_queue=USERS_TASK_QUEUE, workflows=users),
                running_stack(client, registry, **overrides) as stack,
            ):
                recorder = Recorder(stack, files, out)
                await asyncio.gather(*(SCENARIOS[name](recorder) for name in names))
        finally:
            temporal.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    known = ", ".join(SCENARIOS)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"default: all of {known}")
    parser.add_argument("--out", type=Path, default=HISTORIES, help="default: %(default)s")
    args = parser.parse_args(argv)
    names = args.names or list(SCENARIOS)
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        parser.error(f"no such history: {', '.join(unknown)}")
    asyncio.run(record(names, args.out))


if __name__ == "__main__":
    main(sys.argv[1:])
