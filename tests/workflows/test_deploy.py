"""`deploy`: pipelines of real shell steps, approval gates, rollback, cancel, worker crashes."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.deploy import INVALID_PIPELINE, parse_pipeline
from mcp_server.protocol.core.client_view import STEERING_EXTENSION as STEERING
from mcp_server.runtime.devserver import TemporalDevServer
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.settings import Settings
from tests.conftest import StackFactory
from tests.dev_process import WorkerProcess, wait_gone
from tests.mcp_client import TASKS, TASKS_AND_ELICITATION, McpClient

APPROVE = {"action": "accept", "content": {"approve": True}}


def step(name: str, run: str, **keys: str) -> str:
    """One [[steps]] table of a pipeline: its name, its command and any other string keys
    (rollback, approval, cwd). JOURNAL in a command stands for the pipeline's own journal."""
    pairs = {"name": name, "run": run, **keys}
    return "[[steps]]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in pairs.items())


def journaled(name: str, **keys: str) -> str:
    """A step that writes its name to the journal, and undo-NAME when rolled back."""
    return step(name, f"echo {name} >> JOURNAL", rollback=f"echo undo-{name} >> JOURNAL", **keys)


def pipeline(directory: Path, *steps: str) -> tuple[str, Path]:
    """Write a pipeline of `steps` logging to its own journal; return its name and journal."""
    name = f"p-{uuid.uuid4().hex[:12]}"
    toml = "".join(steps).replace("JOURNAL", f"{name}.journal")
    (directory / f"{name}.toml").write_text(toml)
    return name, directory / f"{name}.journal"


def journal(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


THREE_STEPS = (
    journaled("a") + journaled("b", approval="Go on with b?") + step("c", "echo c >> JOURNAL")
)


async def test_an_approved_pipeline_runs_every_step_and_reports_each(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    name, log = pipeline(pipelines_dir, THREE_STEPS)
    task_id = await mcp.create_task("deploy", {"pipeline": name})
    waiting = await mcp.wait_status(task_id, "input_required", within=10)
    ((key, request),) = waiting["inputRequests"].items()
    assert key == "approve-b" and 'step 2/3 "b"' in request["params"]["message"]
    assert "echo b >>" in request["params"]["message"]  # shows what will run
    await mcp.update_task(task_id, {key: APPROVE})
    done = await mcp.wait_terminal(task_id, within=20)
    assert done["result"]["isError"] is False
    steps = done["result"]["structuredContent"]["steps"]
    assert [(s["name"], s["status"], s["exitCode"]) for s in steps] == [
        ("a", "succeeded", 0),
        ("b", "succeeded", 0),
        ("c", "succeeded", 0),
    ]
    assert all(s["durationSeconds"] >= 0 for s in steps)
    assert journal(log) == ["a", "b", "c"]


async def test_a_declined_approval_rolls_back_completed_steps(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    name, log = pipeline(pipelines_dir, THREE_STEPS)
    task_id = await mcp.create_task("deploy", {"pipeline": name})
    await mcp.wait_status(task_id, "input_required", within=10)
    await mcp.update_task(
        task_id, {"approve-b": {"action": "accept", "content": {"approve": False}}}
    )
    done = await mcp.wait_terminal(task_id, within=20)
    assert done["result"]["isError"] is True and "declined" in done["result"]["content"][0]["text"]
    assert journal(log) == ["a", "undo-a"]
    statuses = {s["name"]: s["status"] for s in done["result"]["structuredContent"]["steps"]}
    assert statuses == {"a": "rolled back", "b": "declined", "c": "pending"}


async def test_a_failing_step_rolls_back_in_reverse_and_names_the_step(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    name, log = pipeline(
        pipelines_dir,
        journaled("a"),
        journaled("b"),
        step("c", "echo c >> JOURNAL; echo boom; exit 3", rollback="echo undo-c >> JOURNAL"),
    )
    done = await mcp.wait_terminal(await mcp.create_task("deploy", {"pipeline": name}), within=20)
    text = done["result"]["content"][0]["text"]
    assert done["result"]["isError"] is True
    assert 'step 3/3 "c" exited with 3' in text and "boom" in text
    assert journal(log) == ["a", "b", "c", "undo-b", "undo-a"]


async def test_cancel_kills_the_running_step_rolls_back_and_ends_cancelled(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    name, log = pipeline(
        pipelines_dir,
        journaled("a"),
        step("slow", "echo $$ > JOURNAL.pid; sleep 120 & wait"),
    )
    task_id = await mcp.create_task("deploy", {"pipeline": name})
    running = await mcp.wait_for(task_id, lambda t: '"slow": running' in t.get("statusMessage", ""))
    assert running["status"] == "working"
    pid_file = pipelines_dir / f"{name}.journal.pid"
    deadline = time.monotonic() + 10
    while not pid_file.exists():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    shell = int(pid_file.read_text())
    await mcp.cancel_task(task_id)
    cancelled = await mcp.wait_terminal(task_id, within=10)
    assert cancelled["status"] == "cancelled"
    # A cancelled task carries no result: its statusMessage says what was rolled back.
    assert cancelled["statusMessage"] == (
        'Cancelled during step 2/2 "slow"; rolled back: "a" (succeeded)'
    )
    wait_gone([shell], timeout=5)
    assert journal(log) == ["a", "undo-a"]


async def test_a_deploy_cancelled_at_its_approval_lists_each_rollback_and_its_outcome(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    name, log = pipeline(
        pipelines_dir,
        step("a", "echo a >> JOURNAL", rollback="echo undo-a >> JOURNAL; exit 4"),
        step("b", "echo b >> JOURNAL"),
        step("c", "echo c >> JOURNAL", approval="Go on with c?"),
    )
    task_id = await mcp.create_task("deploy", {"pipeline": name})
    await mcp.wait_status(task_id, "input_required", within=10)
    await mcp.cancel_task(task_id)
    cancelled = await mcp.wait_terminal(task_id, within=20)
    assert cancelled["status"] == "cancelled"
    assert cancelled["statusMessage"] == (
        'Cancelled; rolled back: "b" (none defined), "a" (failed: exited with 4)'
    )
    assert journal(log) == ["a", "b", "undo-a"]


async def test_a_step_whose_activity_fails_outright_still_rolls_back(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    """The step's command cannot even be spawned (its cwd does not exist): the activity fails
    with a non-retryable error instead of returning an exit code. The completed steps are still
    rolled back, and the result names the step and why."""
    name, log = pipeline(
        pipelines_dir,
        journaled("a"),
        journaled("b", cwd="no-such-directory"),
        step("c", "echo c >> JOURNAL"),
    )
    done = await mcp.wait_terminal(await mcp.create_task("deploy", {"pipeline": name}), within=30)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    text = done["result"]["content"][0]["text"]
    assert 'step 2/3 "b" its activity failed: the step cannot start in its cwd' in text
    assert "rolled back" in text
    assert journal(log) == ["a", "undo-a"]
    steps = {s["name"]: s for s in done["result"]["structuredContent"]["steps"]}
    assert (steps["a"]["status"], steps["a"]["rollback"]) == ("rolled back", "succeeded")
    assert steps["b"]["status"] == "failed" and steps["b"]["exitCode"] is None
    assert "no-such-directory" in steps["b"]["error"] and steps["c"]["status"] == "pending"


async def test_a_rollback_whose_activity_fails_outright_is_recorded_and_the_others_still_run(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    (pipelines_dir / "gone").mkdir(exist_ok=True)
    name, log = pipeline(
        pipelines_dir,
        journaled("a"),
        step(
            "b",
            "echo b >> ../JOURNAL && rmdir ../gone",
            cwd="gone",
            rollback="echo undo-b >> ../JOURNAL",
        ),
        step("c", "exit 9"),
    )
    done = await mcp.wait_terminal(await mcp.create_task("deploy", {"pipeline": name}), within=30)
    text = done["result"]["content"][0]["text"]
    assert 'step 3/3 "c" exited with 9; rolled back (the rollback of b failed)' in text
    steps = {s["name"]: s for s in done["result"]["structuredContent"]["steps"]}
    assert steps["b"]["rollback"].startswith("failed: its activity failed: the step cannot start")
    assert steps["a"]["rollback"] == "succeeded"
    assert journal(log) == ["a", "b", "undo-a"]


async def test_an_unknown_or_broken_pipeline_is_a_clear_tool_error(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    missing = await mcp.wait_terminal(await mcp.create_task("deploy", {"pipeline": "nope"}))
    assert "no pipeline named 'nope'" in missing["result"]["content"][0]["text"]
    (pipelines_dir / "broken.toml").write_text("[[steps]]\nname = 'x'\n")
    broken = await mcp.wait_terminal(await mcp.create_task("deploy", {"pipeline": "broken"}))
    assert (
        "broken.toml: steps[0].run (step 'x'): is required"
        in broken["result"]["content"][0]["text"]
    )
    escape = await mcp.call_tool("deploy", {"pipeline": "../secrets"})
    assert escape.error["code"] == -32602


async def test_a_gate_the_caller_cannot_answer_waits_for_someone_who_can_without_rolling_back(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    """A client without the elicitation capability is not shown the form (wire §1.6): to it
    the task is `working`, saying where the question is answered; nothing is rolled back, and
    a client that can answer (here another client of the same owner) does."""
    name, log = pipeline(pipelines_dir, THREE_STEPS)
    created = await mcp.call_tool("deploy", {"pipeline": name}, capabilities=TASKS)
    task_id = created.result["taskId"]
    waiting = await mcp.wait_status(task_id, "input_required", within=10)
    assert list(waiting["inputRequests"]) == ["approve-b"]  # to a client that can answer
    unaware = (await mcp.get_task(task_id, capabilities=TASKS)).result
    assert unaware["status"] == "working" and "inputRequests" not in unaware
    assert 'Waiting for approval before step 2/3 "b"' in unaware["statusMessage"]
    assert f"mcp-tasks tasks answer {task_id}" in unaware["statusMessage"]
    assert "approval inbox" in unaware["statusMessage"]
    assert journal(log) == ["a"]  # still waiting, nothing undone
    await mcp.update_task(task_id, {"approve-b": APPROVE})
    done = await mcp.wait_terminal(task_id, within=20)
    assert done["result"]["isError"] is False
    assert journal(log) == ["a", "b", "c"]


@pytest.mark.slow
@pytest.mark.timeout(180)  # 25-55 s measured alone: too close to the default 90 s under load
async def test_a_worker_killed_mid_step_resumes_without_rerunning_completed_steps(
    fresh_stack: StackFactory, pipelines_dir: Path, temporal: TemporalDevServer
) -> None:
    name, log = pipeline(
        pipelines_dir,
        step("a", "echo a >> JOURNAL"),
        step("b", "echo b >> JOURNAL; sleep 30; echo b-done >> JOURNAL"),
        step("c", "echo c >> JOURNAL"),
    )
    # "b" sleeps far longer than the heartbeat timeout after which the retry starts, so the
    # crashed attempt's process is still running when the retry kills it, even on a slow host.
    # No quota: its reservation needs a worker, and the worker process below may take longer
    # than the reservation waits (10 s) to start polling on a loaded host.
    async with fresh_stack(max_open_tasks_per_principal=0) as stack:
        await stack.stop_worker()
        worker = WorkerProcess(
            temporal.address, stack.settings.task_queue, pipelines_dir=str(pipelines_dir)
        )
        try:
            task_id = await stack.mcp.create_task("deploy", {"pipeline": name})
            await stack.mcp.wait_for(task_id, lambda t: journal(log) == ["a", "b"], within=30)
        finally:
            worker.kill()
        await stack.start_worker()
        retried = await stack.mcp.wait_for(
            task_id, lambda t: "(attempt 2)" in t.get("statusMessage", ""), within=30
        )
        assert '"b": running' in retried["statusMessage"]
        done = await stack.mcp.wait_terminal(task_id, within=60)
        assert done["result"]["isError"] is False
        # The crashed attempt's process was still sleeping when the retry started: the retry
        # killed its process group first, so only the retry finished "b".
        assert journal(log) == ["a", "b", "b", "b-done", "c"]
        b = done["result"]["structuredContent"]["steps"][1]
        assert b["attempt"] == 2


# ----- the pipeline file ---------------------------------------------------------------------


def parsed(directory: Path, text: str) -> dict[str, Any]:
    path = directory / "deploy.toml"
    path.write_text(text)
    return parse_pipeline(path)


def rejection(directory: Path, text: str) -> str:
    with pytest.raises(ApplicationError) as raised:
        parsed(directory, text)
    assert raised.value.type == INVALID_PIPELINE and raised.value.non_retryable
    return raised.value.message


def test_the_example_pipeline_is_valid_and_keeps_its_shape() -> None:
    example = Path(__file__).resolve().parents[2] / "pipelines" / "example.toml"
    pipeline = parse_pipeline(example)
    assert pipeline["description"].startswith("Build, migrate")
    build, migrate, switch = pipeline["steps"]
    assert build == {
        "name": "build",
        "run": "echo building version $VERSION && sleep 3 && echo built",
        "cwd": str(example.parent),
        "env": {"VERSION": "1.2.0"},
        "timeout_seconds": 300,
        "rollback": "echo removing build artefacts of $VERSION",
        "approval": None,
    }
    assert switch["approval"] == "Switch production traffic to 1.2.0?"
    assert switch["timeout_seconds"] == 600 and migrate["env"] == {}


def test_the_deploy_tool_describes_a_call_by_its_pipelines_description(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    registry = load_toolsets("demo", (), Settings(pipelines_dir=str(root / "pipelines")))
    deploy = registry.get("deploy")
    assert deploy is not None and deploy.describe is not None
    assert deploy.describe({"pipeline": "release"}) == (
        "Build, then (after the release manager approves) switch traffic"
    )
    assert deploy.describe({"pipeline": "no-such"}) is None
    assert deploy.describe({"pipeline": "../etc/passwd"}) is None
    elsewhere = load_toolsets("demo", (), Settings(pipelines_dir=str(tmp_path / "none")))
    described = elsewhere.get("deploy")
    assert described is not None and described.describe is not None
    assert described.describe({"pipeline": "release"}) is None  # the server has no pipelines


def test_a_steps_cwd_is_resolved_against_the_pipeline_directory_and_unknown_keys_are_ignored(
    tmp_path: Path,
) -> None:
    pipeline = parsed(
        tmp_path, "owner = 'ops'\n[[steps]]\nname = 'a'\nrun = 'true'\ncwd = 'sub'\nnote = 1\n"
    )
    assert pipeline["description"] == ""
    assert pipeline["steps"][0]["cwd"] == str(tmp_path / "sub")
    assert pipeline["steps"][0]["timeout_seconds"] == 600


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("description = 'x'", "deploy.toml: steps: is required"),
        ("steps = []", "deploy.toml: steps: needs at least one [[steps]] table"),
        ("steps = 'build'", "deploy.toml: steps: must be an array of tables"),
        ("steps = [1]", "deploy.toml: steps[0]: must be a table"),
        ("[[steps]]\nrun = 'true'", "deploy.toml: steps[0].name: is required"),
        ("[[steps]]\nname = 'a'", "deploy.toml: steps[0].run (step 'a'): is required"),
        (
            "[[steps]]\nname = 'a'\nrun = '  '",
            "deploy.toml: steps[0].run (step 'a'): must be a shell command, not blank",
        ),
        (
            "[[steps]]\nname = 'a'\nrun = 'true'\nenv = { A = 1 }",
            "deploy.toml: steps[0].env.A (step 'a'): must be a string",
        ),
        (
            "[[steps]]\nname = 'a'\nrun = 'true'\nenv = 'A=1'",
            "deploy.toml: steps[0].env (step 'a'): must be a table",
        ),
        (
            "[[steps]]\nname = 'a'\nrun = 'true'\ntimeout_seconds = '60'",
            "deploy.toml: steps[0].timeout_seconds (step 'a'): must be a number",
        ),
        (
            "[[steps]]\nname = 'a'\nrun = 'true'\ntimeout_seconds = 86401",
            "deploy.toml: steps[0].timeout_seconds (step 'a'): must be in (0, 86400]",
        ),
        (
            "[[steps]]\nname = 'a'\nrun = 'true'\napproval = true",
            "deploy.toml: steps[0].approval (step 'a'): must be a string",
        ),
        (
            "[[steps]]\nname = 'a'\nrun = 'true'\nrollback = ['undo']",
            "deploy.toml: steps[0].rollback (step 'a'): must be a string",
        ),
        ("[[steps]\nname = 'a'", "deploy.toml: cannot be read as TOML"),
    ],
)
def test_an_invalid_pipeline_is_rejected_naming_the_file_the_key_and_the_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    assert rejection(tmp_path, text).startswith(problem)


def test_the_key_path_of_a_later_step_names_its_index_and_its_name(tmp_path: Path) -> None:
    steps = step("a", "true") + step("b", "true")
    message = rejection(tmp_path, steps + step("c", "true") + "timeout_seconds = 0\n")
    assert message == "deploy.toml: steps[2].timeout_seconds (step 'c'): must be in (0, 86400]"


def test_a_step_name_used_twice_is_rejected_naming_both_steps(tmp_path: Path) -> None:
    steps = "".join(step(name, "true") for name in ("a", "b", "a"))
    assert rejection(tmp_path, steps) == (
        "deploy.toml: steps: the name 'a' is used twice (steps[0] and steps[2])"
    )


def test_every_problem_of_a_pipeline_is_reported_at_once(tmp_path: Path) -> None:
    message = rejection(tmp_path, "[[steps]]\nname = 'a'\n[[steps]]\nrun = 'true'")
    assert message == (
        "deploy.toml: steps[0].run (step 'a'): is required; steps[1].name: is required"
    )


async def test_a_host_without_tasks_finishes_a_deploy_through_the_follow_up_tools(
    fresh_stack: StackFactory, pipelines_dir: Path
) -> None:
    """A 2025-11-25 host that knows no tasks and cannot take questions mid-call (JSON only):
    the call returns a follow-up result naming the task; a later turn reads the question,
    approves it, and reads the finished deploy, all through ordinary tools."""
    from tests.client_2025 import Client2025

    name, log = pipeline(pipelines_dir, THREE_STEPS)
    async with fresh_stack(sync_wait_s=1.0) as stack:
        host = Client2025(stack.http, stack.url, accept="application/json")
        await host.initialize()
        first = await host.request(
            "tools/call", {"name": "deploy", "arguments": {"pipeline": name}}
        )
        follow_up = first.result["structuredContent"]
        task_id = follow_up["taskId"]
        assert follow_up["followUpTools"] == ["task_status", "task_respond", "task_cancel"]
        # Never an error while the task runs (deploy lists an outputSchema that admits the
        # follow-up), and the text tells the model not to start a second deploy.
        assert task_id in first.result["content"][0]["text"] and not first.result["isError"]
        assert "Do not call `deploy` again" in first.result["content"][0]["text"]

        async def status() -> dict[str, Any]:
            reply = await host.request(
                "tools/call", {"name": "task_status", "arguments": {"taskId": task_id}}
            )
            return reply.result

        deadline = time.monotonic() + 15
        while (waiting := await status())["structuredContent"]["status"] != "input_required":
            assert time.monotonic() < deadline, waiting
            await asyncio.sleep(0.2)
        assert "Go on with b?" in waiting["content"][0]["text"]
        answered = await host.request(
            "tools/call",
            {
                "name": "task_respond",
                "arguments": {"taskId": task_id, "action": "accept", "content": {"approve": True}},
            },
        )
        assert not answered.result["isError"], answered.result
        while "steps" not in (done := await status()).get("structuredContent", {}):
            assert time.monotonic() < deadline, done
            await asyncio.sleep(0.2)
        assert [s["status"] for s in done["structuredContent"]["steps"]] == ["succeeded"] * 3
        assert journal(log) == ["a", "b", "c"]
        stranger = Client2025(stack.http, stack.url)
        await stranger.initialize()
        other = await stranger.request(
            "tools/call", {"name": "task_cancel", "arguments": {"taskId": "mcp-task-" + "0" * 32}}
        )
        assert other.result["isError"] is True


async def test_a_paused_deploy_finishes_its_step_and_holds_before_the_next_until_resumed(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    name, log = pipeline(pipelines_dir, THREE_STEPS)
    task_id = await mcp.create_task("deploy", {"pipeline": name})
    await mcp.wait_status(task_id, "input_required", within=10)
    steering = {**TASKS_AND_ELICITATION, "extensions": {**TASKS["extensions"], STEERING: {}}}

    async def control(verb: str) -> Any:
        params = {"taskId": task_id}
        headers = {"Mcp-Name": task_id}
        method = f"mcp-tasks-temporal/{verb}"
        return await mcp.rpc(method, params, capabilities=steering, headers=headers)

    assert (await control("pause")).status == 200
    await mcp.update_task(task_id, {"approve-b": APPROVE})
    held = await mcp.wait_for(task_id, lambda t: t["statusMessage"].startswith("Paused:"), 20)
    assert held["status"] == "working" and journal(log) == ["a", "b"]  # c waits
    assert (await control("resume")).status == 200
    done = await mcp.wait_terminal(task_id, within=20)
    assert done["result"]["isError"] is False and journal(log) == ["a", "b", "c"]
