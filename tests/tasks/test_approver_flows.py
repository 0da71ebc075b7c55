"""Approvers where they come from (a pipeline's gate, the server's default for request_approval)
and in the 2025-11-25 era, and deploy's step timeline; real HTTP, tokens, Temporal, shell steps.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.client import Client

from mcp_server.protocol.frame import errors
from mcp_server.runtime.tokens import add_token
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.settings import Settings
from tests.client_2025 import Client2025
from tests.conftest import Stack, running_stack
from tests.mcp_client import TASKS, McpClient
from tests.test_security import as_client, jwt_stack, mint, signing_key  # noqa: F401 (fixtures)

APPROVE_GATE = {"action": "accept", "content": {"approve": True}}
APPROVE = {"action": "accept", "content": {"decision": "approve"}}
GATED = """
[[steps]]
name = "build"
run = "echo built; echo build >> JOURNAL"
rollback = "echo undo-build >> JOURNAL"
[[steps]]
name = "switch"
approval = "Switch traffic?"
approvers = ["release-manager"]
run = "echo switched; echo switch >> JOURNAL"
"""


@pytest.fixture
async def release(
    temporal_client: Client, pipelines_dir: Path, tmp_path: Path
) -> AsyncIterator[tuple[Stack, dict[str, str]]]:
    """A stack whose server names `release-manager` as request_approval's default approver,
    with tokens for `dev` (scope deploy), `release-manager` and `eve`."""
    path = tmp_path / "tokens.json"
    tokens = {
        "dev": add_token(path, "dev", ["deploy"]),
        "rm": add_token(path, "release-manager", []),
        "eve": add_token(path, "eve", ["deploy"]),
    }
    settings = Settings(pipelines_dir=str(pipelines_dir), approval_approvers=("release-manager",))
    registry = load_toolsets("conformance", ["mcp_server.tools.demo"], settings)
    async with running_stack(
        temporal_client,
        registry,
        auth="tokens",
        tokens_file=str(path),
        poll_burst=1000,
        sync_wait_s=3.0,
        approvers_may_cancel=True,
    ) as stack:
        yield stack, tokens


def client(stack: Stack, token: str) -> McpClient:
    mcp = McpClient(stack.http, stack.url)
    mcp.extra_headers = {"Authorization": f"Bearer {token}"}
    return mcp


async def snapshot(stack: Stack, task_id: str) -> TaskSnapshot:
    found = await TemporalTaskStore(stack.client, stack.settings.task_queue).get(task_id)
    assert found is not None
    return found


def write_pipeline(directory: Path, steps: str) -> tuple[str, Path]:
    name = f"p-{uuid.uuid4().hex[:12]}"
    (directory / f"{name}.toml").write_text(steps.replace("JOURNAL", f"{name}.journal"))
    return name, directory / f"{name}.journal"


async def test_a_deploy_gate_with_approvers_waits_for_them_though_the_caller_cannot_elicit(
    release: tuple[Stack, dict[str, str]], pipelines_dir: Path
) -> None:
    stack, tokens = release
    dev, rm = client(stack, tokens["dev"]), client(stack, tokens["rm"])
    name, journal = write_pipeline(pipelines_dir, GATED)
    created = await dev.call_tool("deploy", {"pipeline": name}, capabilities=TASKS)
    task_id = created.result["taskId"]
    waiting = await dev.wait_status(task_id, "input_required", within=20)
    assert "awaiting the decision of release-manager" in waiting["statusMessage"]
    (key,) = waiting["inputRequests"]
    steps = (await snapshot(stack, task_id)).steps
    assert steps is not None
    build, switch = steps
    assert (build["name"], build["status"], build["exitCode"]) == ("build", "succeeded", 0)
    assert build["outputTail"] == "built\n" and build["startedAt"] <= build["endedAt"]
    assert switch == {"name": "switch", "status": "waiting"}
    refused = await dev.update_task(task_id, {key: APPROVE_GATE})
    assert refused.error["code"] == errors.NOT_AN_APPROVER
    assert "release-manager" in refused.error["message"]
    assert (await rm.update_task(task_id, {key: APPROVE_GATE})).status == 200
    done = await dev.wait_terminal(task_id, within=20)
    assert done["result"]["isError"] is False
    assert journal.read_text().split() == ["build", "switch"]
    final = await snapshot(stack, task_id)
    assert [(s["name"], s["status"]) for s in final.steps or []] == [
        ("build", "succeeded"),
        ("switch", "succeeded"),
    ]
    assert final.answered_by == {key: "release-manager"} and final.requested_by == "dev"


async def test_the_timeline_of_a_failed_deploy_shows_the_failure_the_rollback_and_the_rest(
    mcp: McpClient, stack: Stack, pipelines_dir: Path
) -> None:
    name, _ = write_pipeline(
        pipelines_dir,
        """
[[steps]]
name = "a"
run = "echo a"
rollback = "echo undo-a"
[[steps]]
name = "b"
run = "head -c 5000 /dev/zero | tr '\\\\0' x; echo; echo the end; exit 3"
[[steps]]
name = "c"
run = "echo c"
""",
    )
    task_id = await mcp.create_task("deploy", {"pipeline": name})
    done = await mcp.wait_terminal(task_id, within=30)
    assert done["result"]["isError"] is True
    steps = (await snapshot(stack, task_id)).steps
    assert steps is not None
    a, b, c = steps
    assert (a["status"], a["rollback"]) == ("rolled back", "succeeded")
    assert (b["status"], b["exitCode"]) == ("failed", 3)
    assert len(b["outputTail"]) == 1000 and b["outputTail"].endswith("x\nthe end\n")
    assert c == {"name": "c", "status": "skipped"}


async def test_the_servers_default_approvers_decide_a_request_approval_that_names_none(
    release: tuple[Stack, dict[str, str]],
) -> None:
    stack, tokens = release
    dev, rm = client(stack, tokens["dev"]), client(stack, tokens["rm"])
    created = await dev.call_tool("request_approval", {"message": "Go?"}, capabilities=TASKS)
    task_id = created.result["taskId"]
    await dev.wait_status(task_id, "input_required")
    refused = await dev.update_task(task_id, {"decision": APPROVE})
    assert refused.error["code"] == errors.NOT_AN_APPROVER
    assert "release-manager" in refused.error["message"]
    assert (await rm.update_task(task_id, {"decision": APPROVE})).status == 200
    done = await dev.wait_terminal(task_id)
    assert done["result"]["content"][0]["text"] == "Decision: approved by release-manager"


async def test_an_approver_may_cancel_where_the_server_allows_it(
    release: tuple[Stack, dict[str, str]],
) -> None:
    stack, tokens = release
    dev, rm = client(stack, tokens["dev"]), client(stack, tokens["rm"])
    task_id = await dev.create_task("request_approval", {"message": "Go?"})
    await dev.wait_status(task_id, "input_required")
    assert (await rm.cancel_task(task_id)).status == 200
    assert (await dev.wait_terminal(task_id))["status"] == "cancelled"


class Host:
    """Answers the server's elicitation requests, and remembers them."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(request)
        return self.answer


async def legacy_session(stack: Stack, token: str, host: Host) -> Client2025:
    http = httpx.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {token}"})
    session = Client2025(http, stack.url, capabilities={"elicitation": {}}, on_request=host)
    await session.initialize()
    return session


async def test_at_2025_11_25_the_question_goes_to_the_approver_not_to_the_caller(
    release: tuple[Stack, dict[str, str]],
) -> None:
    """The caller's host can elicit, yet is never asked (its call ends with the follow-up), and
    its task_respond is refused; the approver's tasks/result is asked, and decides."""
    stack, tokens = release
    dev_host, rm_host = Host(APPROVE), Host(APPROVE)
    dev = await legacy_session(stack, tokens["dev"], dev_host)
    rm = await legacy_session(stack, tokens["rm"], rm_host)
    try:
        call = await dev.request(
            "tools/call", {"name": "request_approval", "arguments": {"message": "Go?"}}
        )
        follow_up = call.result["structuredContent"]
        assert follow_up["status"] == "input_required" and dev_host.asked == []
        task_id = follow_up["taskId"]
        respond = {"taskId": task_id, "action": "accept", "content": {"decision": "approve"}}
        refused = await dev.request("tools/call", {"name": "task_respond", "arguments": respond})
        assert refused.result["isError"] is True
        assert "release-manager" in refused.result["content"][0]["text"]
        result = await rm.request("tasks/result", {"taskId": task_id})
        assert result.result["content"][0]["text"] == "Decision: approved by release-manager"
        assert [r["method"] for r in rm_host.asked] == ["elicitation/create"]
    finally:
        await dev.http.aclose()
        await rm.http.aclose()


async def test_a_jwt_approver_is_named_by_subject_whatever_client_it_uses(
    jwt_stack: Stack,  # noqa: F811
    signing_key: rsa.RSAPrivateKey,  # noqa: F811
) -> None:
    """`sub` names the approver; the OAuth client (which is part of the owner's digest) does
    not matter, and a token whose scope holds `release` decides as `scope:release`."""
    dev = as_client(jwt_stack, mint(signing_key, sub="dev", client_id="agent"))
    rm = as_client(jwt_stack, mint(signing_key, sub="release-manager", client_id="inbox-app"))
    carol = as_client(jwt_stack, mint(signing_key, sub="carol", scope="mcp:tasks release"))
    arguments = {"message": "Go?", "approvers": ["release-manager"]}
    first = (await dev.call_tool("request_approval", arguments, capabilities=TASKS)).result
    arguments["approvers"] = ["scope:release"]
    second = (await dev.call_tool("request_approval", arguments, capabilities=TASKS)).result
    for decider, task in ((rm, first), (carol, second)):
        await dev.wait_status(task["taskId"], "input_required")
        assert (await decider.update_task(task["taskId"], {"decision": APPROVE})).status == 200
    first_done = await dev.wait_terminal(first["taskId"])
    second_done = await dev.wait_terminal(second["taskId"])
    assert first_done["result"]["structuredContent"]["decidedByName"] == "release-manager"
    assert second_done["result"]["structuredContent"]["decidedByName"] == "carol"
