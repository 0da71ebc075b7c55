"""The default `demo` toolset: a synchronous tool and a multi-step job of real activities."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from tests.mcp_client import McpClient


async def test_echo_returns_structured_content_matching_its_output_schema(mcp: McpClient) -> None:
    tools = {t["name"]: t for t in (await mcp.rpc("tools/list")).result["tools"]}
    result = (await mcp.call_tool("echo", {"text": "hé"})).result
    assert result["structuredContent"] == {"text": "hé", "length": 2}
    Draft202012Validator(tools["echo"]["outputSchema"]).validate(result["structuredContent"])


async def test_a_multi_step_job_reports_each_step_and_lists_them_in_its_result(
    mcp: McpClient,
) -> None:
    task_id = await mcp.create_task(
        "multi_step_job", {"name": "build", "steps": 2, "step_seconds": 0.5}
    )
    seen = await mcp.wait_for(task_id, lambda t: "step" in t.get("statusMessage", ""))
    assert seen["statusMessage"].startswith("step ")
    done = await mcp.wait_terminal(task_id, within=20)
    steps = done["result"]["structuredContent"]["steps"]
    assert [s["step"] for s in steps] == [1, 2] and all(s["attempt"] == 1 for s in steps)


async def test_a_declined_approval_runs_nothing_and_is_a_tool_error(mcp: McpClient) -> None:
    task_id = await mcp.create_task("multi_step_job", {"require_approval": True, "steps": 1})
    waiting = await mcp.wait_status(task_id, "input_required", within=5)
    assert waiting["inputRequests"]["approve"]["params"]["requestedSchema"]["required"] == [
        "approve"
    ]
    await mcp.update_task(task_id, {"approve": {"action": "accept", "content": {"approve": False}}})
    done = await mcp.wait_terminal(task_id)
    assert done["result"]["isError"] is True
    assert done["result"]["structuredContent"] == {"name": "job", "approved": False, "steps": []}


async def test_an_approved_job_runs_its_steps(mcp: McpClient) -> None:
    task_id = await mcp.create_task(
        "multi_step_job", {"require_approval": True, "steps": 1, "step_seconds": 0.2}
    )
    await mcp.wait_status(task_id, "input_required", within=5)
    answer = {"action": "accept", "content": {"approve": True, "comment": "ship it"}}
    await mcp.update_task(task_id, {"approve": answer})
    done = await mcp.wait_terminal(task_id, within=20)
    assert done["result"]["structuredContent"]["approved"] is True


async def test_cancelling_a_job_mid_step_stops_its_activity(mcp: McpClient) -> None:
    task_id = await mcp.create_task("multi_step_job", {"steps": 3, "step_seconds": 60})
    await mcp.wait_for(task_id, lambda t: t.get("statusMessage", "").startswith("step 1/3"))
    await mcp.cancel_task(task_id)
    assert (await mcp.wait_terminal(task_id, within=10))["status"] == "cancelled"
