"""Existing Temporal workflows as MCP tools, with no change to them (their worker is the user's)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.worker import Worker

from activities.exposed import probe_child
from mcp_server.tools.exposed import load
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.settings import ConfigError, Settings
from tests.conftest import StackFactory
from tests.mcp_client import McpClient
from tests.user_workflows import (
    EXPOSED_TOML,
    NOBODY_POLLS_QUEUE,
    USERS_TASK_QUEUE,
    AddNumbers,
    PlaceOrder,
)
from workflows import exposed


@pytest.fixture(scope="module", autouse=True)
async def users_worker(temporal_client: Client) -> AsyncIterator[None]:
    """The user's own worker: it knows their workflows and nothing of this server."""
    async with Worker(
        temporal_client, task_queue=USERS_TASK_QUEUE, workflows=[PlaceOrder, AddNumbers]
    ):
        yield


async def test_the_workflow_runs_as_a_task_and_its_result_is_mapped(
    mcp: McpClient, temporal_client: Client
) -> None:
    task_id = await mcp.create_task("place_order", {"item": "book"})
    done = await mcp.wait_terminal(task_id)
    assert done["result"]["structuredContent"] == {"id": "r-book", "item": "book"}
    assert done["result"]["isError"] is False
    child = await temporal_client.get_workflow_handle(f"{task_id}-TestsPlaceOrder").describe()
    assert child.workflow_type == "TestsPlaceOrder" and child.task_queue == USERS_TASK_QUEUE


async def test_a_client_without_the_tasks_extension_gets_the_result_of_an_attached_run(
    mcp: McpClient,
) -> None:
    # task_support defaults to "optional": a host without tasks is not refused with -32021.
    reply = await mcp.call_tool("place_order", {"item": "pen"}, capabilities={})
    assert reply.result["resultType"] == "complete"
    assert reply.result["structuredContent"] == {"id": "r-pen", "item": "pen"}


async def test_positional_arguments_and_a_plain_result(mcp: McpClient) -> None:
    done = await mcp.wait_terminal(await mcp.create_task("add_numbers", {"a": 2, "b": 3}))
    assert done["result"]["structuredContent"] == {"result": 5}
    assert done["result"]["content"][0]["text"] == "5"


async def test_a_workflow_failure_is_an_is_error_result(mcp: McpClient) -> None:
    done = await mcp.wait_terminal(
        await mcp.create_task("place_order", {"item": "x", "fail": True})
    )
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert "card declined" in done["result"]["content"][0]["text"]


async def test_cancelling_the_task_cancels_the_users_workflow(
    mcp: McpClient, temporal_client: Client
) -> None:
    task_id = await mcp.create_task("place_order", {"item": "slow", "seconds": 60})
    running = await mcp.wait_for(task_id, lambda t: "TestsPlaceOrder" in t.get("statusMessage", ""))
    assert running["status"] == "working"
    await mcp.cancel_task(task_id)
    assert (await mcp.wait_terminal(task_id))["status"] == "cancelled"
    child = await temporal_client.get_workflow_handle(f"{task_id}-TestsPlaceOrder").describe()
    assert child.status == WorkflowExecutionStatus.CANCELED


async def test_a_worker_started_without_the_file_runs_the_servers_exposed_tasks(
    fresh_stack: StackFactory,
) -> None:
    # Only the server reads MCP_TASKS_EXPOSED_WORKFLOWS_FILE; the worker of the same task
    # queue has none (as `mcp-tasks worker` started without it).
    async with fresh_stack() as stack:
        await stack.stop_worker()
        modules = ["mcp_server.tools.demo", "tests.fixture_tools"]
        stack.registry = load_toolsets("conformance", modules, Settings())
        assert stack.registry.get("place_order") is None
        await stack.start_worker()
        done = await stack.mcp.wait_terminal(
            await stack.mcp.create_task("place_order", {"item": "lamp"}), within=30
        )
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == {"id": "r-lamp", "item": "lamp"}


async def test_a_queue_no_worker_polls_is_reported_and_cancel_ends_the_task(
    mcp: McpClient, temporal_client: Client
) -> None:
    task_id = await mcp.create_task("unserved_order", {"item": "x"})
    stuck = await mcp.wait_for(
        task_id, lambda t: "no worker polls" in t.get("statusMessage", ""), within=30
    )
    assert stuck["status"] == "working"
    assert stuck["statusMessage"] == (
        f"no worker polls task queue {NOBODY_POLLS_QUEUE}; waiting for it "
        "(cancel the task to give up)"
    )
    await mcp.cancel_task(task_id)
    cancelled = await mcp.wait_terminal(task_id, within=30)
    assert cancelled["status"] == "cancelled"
    assert "TestsPlaceOrder did not stop within 2 s" in cancelled["statusMessage"]
    child = await temporal_client.get_workflow_handle(f"{task_id}-TestsPlaceOrder").describe()
    assert child.status == WorkflowExecutionStatus.TERMINATED  # nothing left running


async def test_a_type_no_worker_registers_is_reported_and_cancel_ends_the_task(
    mcp: McpClient, temporal_client: Client
) -> None:
    task_id = await mcp.create_task("misspelt_order", {"item": "x"})
    stuck = await mcp.wait_for(
        task_id, lambda t: "cannot run TestsPlaceOrdr" in t.get("statusMessage", ""), within=30
    )
    assert stuck["status"] == "working"
    assert f"the workers polling task queue {USERS_TASK_QUEUE}" in stuck["statusMessage"]
    assert "TestsPlaceOrdr" in stuck["statusMessage"].split("cannot run TestsPlaceOrdr: ")[1]
    await mcp.cancel_task(task_id)
    assert (await mcp.wait_terminal(task_id, within=30))["status"] == "cancelled"
    child = await temporal_client.get_workflow_handle(f"{task_id}-TestsPlaceOrdr").describe()
    assert child.status != WorkflowExecutionStatus.RUNNING


# ----- the exposed-workflows file ------------------------------------------------------------

ENTRY = '[[tools]]\nname = "refund"\nworkflow = "Refund"\ntask_queue = "payments"\n'


def rejection(tmp_path: Path, text: str) -> str:
    source = tmp_path / "exposed.toml"
    source.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load(source)
    return str(raised.value)


def test_the_tests_file_is_valid_and_its_entries_become_task_tools(tmp_path: Path) -> None:
    source = tmp_path / "exposed.toml"
    source.write_text(EXPOSED_TOML)
    place_order, add_numbers, unserved, _ = (entry.tool() for entry in load(source))
    assert place_order.workflow_config == {
        "workflow": "TestsPlaceOrder",
        "task_queue": USERS_TASK_QUEUE,
        "positional": [],
        "result_path": "receipt",
        "no_worker_wait_seconds": 60,
        "cancel_wait_seconds": 30,
    }
    assert unserved.workflow_config["no_worker_wait_seconds"] == 1
    assert (place_order.task_support, place_order.ttl_ms) == ("optional", 24 * 3_600_000)
    assert add_numbers.description == "Runs the TestsAddNumbers workflow."
    assert add_numbers.workflow_config["positional"] == ["a", "b"]


def test_an_entry_may_make_its_tool_task_only(tmp_path: Path) -> None:
    source = tmp_path / "exposed.toml"
    source.write_text(ENTRY + 'task_support = "required"\n')
    (refund,) = (entry.tool() for entry in load(source))
    assert refund.task_support == "required"
    assert "tools[0].task_support (tool 'refund')" in rejection(
        tmp_path, ENTRY + 'task_support = "never"\n'
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            ENTRY + 'result_pth = "receipt"',
            "tools[0].result_pth (tool 'refund'): is not a known key",
        ),
        ('[[tool]]\nname = "refund"', "tool: is not a known key"),
        (
            '[[tools]]\nname = "refund"\nworkflow = "Refund"',
            "tools[0].task_queue (tool 'refund'): is required",
        ),
        (
            '[[tools]]\nname = ""\nworkflow = "R"\ntask_queue = "q"',
            "tools[0].name (tool ''): must not be empty",
        ),
        (ENTRY + "ttl_hours = 0", "tools[0].ttl_hours (tool 'refund'): must be greater than 0"),
        (ENTRY + 'ttl_hours = "24"', "tools[0].ttl_hours (tool 'refund'): must be a number"),
        (
            ENTRY + "poll_interval_ms = 1.5",
            "tools[0].poll_interval_ms (tool 'refund'): must be an integer",
        ),
        (ENTRY + 'positional = "a"', "tools[0].positional (tool 'refund'): must be a list"),
        (
            ENTRY + 'input_schema = { type = "array" }',
            "tools[0].input_schema (tool 'refund'): must be the JSON Schema of an object",
        ),
        (
            ENTRY + 'input_schema = { type = "object", required = 3 }',
            "tools[0].input_schema (tool 'refund'): is not a valid JSON Schema",
        ),
        ("[[tools]\n", "cannot be read as TOML"),
    ],
)
def test_a_bad_entry_is_a_config_error_naming_the_file_the_entry_and_the_key(
    tmp_path: Path, text: str, problem: str
) -> None:
    assert rejection(tmp_path, text).startswith(f"{tmp_path / 'exposed.toml'}: {problem}")


def test_a_later_entry_is_named_by_its_index_and_name_and_every_problem_is_reported(
    tmp_path: Path,
) -> None:
    second = ENTRY.replace("refund", "void") + "ttl_hour = 1\n"
    message = rejection(tmp_path, ENTRY + "ttl_hours = -1\n" + second)
    assert message == (
        f"{tmp_path / 'exposed.toml'}: "
        "tools[0].ttl_hours (tool 'refund'): must be greater than 0; "
        "tools[1].ttl_hour (tool 'void'): is not a known key"
    )


def test_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.toml: cannot be read"):
        load(tmp_path / "missing.toml")


def test_the_toolsets_do_not_load_with_a_bad_exposed_workflows_file(
    tmp_path: Path,
) -> None:
    source = tmp_path / "exposed.toml"
    source.write_text(ENTRY + '[[tools]]\nname = "void"\nworkflow = "Void"\n')
    settings = Settings(exposed_workflows_file=str(source))
    with pytest.raises(ConfigError, match=r"tools\[1\]\.task_queue \(tool 'void'\): is required"):
        load_toolsets("demo", (), settings)


@pytest.mark.parametrize("toolset", ["demo", "conformance"])
def test_every_worker_serves_exposed_tasks_with_or_without_the_file(toolset: str) -> None:
    # A task carries its tool's configuration in its input: a worker started without
    # MCP_TASKS_EXPOSED_WORKFLOWS_FILE still runs the tasks of a server that has it.
    registry = load_toolsets(toolset, settings=Settings())
    assert exposed.ExposedWorkflow in registry.workflows
    assert probe_child in registry.activities
    assert not [tool for tool in registry.tools() if tool.workflow == "ExposedWorkflow"]
