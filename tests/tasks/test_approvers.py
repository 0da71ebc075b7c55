"""Approvers: someone other than the caller decides, over real HTTP, real tokens and a
real Temporal. The developer `dev` asks; `release-manager` (named) or `carol` (scope release)
decides; `eve` sees nothing."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from mcp_server.protocol.core.client_view import STEERING_EXTENSION
from mcp_server.protocol.frame import errors
from mcp_server.protocol.frame.wire import TASKS_EXTENSION
from mcp_server.runtime.tokens import add_token
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.loading import load_toolsets
from mcp_tasks.contracts.approvers import approver_id
from mcp_tasks.settings import ConfigError, Settings
from tests.conftest import Stack, StackFactory, running_stack
from tests.mcp_client import TASKS, McpClient

NOT_FOUND = {"code": errors.INVALID_PARAMS, "message": errors.TASK_NOT_FOUND_MESSAGE}
APPROVERS = ["release-manager", "scope:release"]
APPROVE = {"action": "accept", "content": {"decision": "approve"}}
PEOPLE = {
    "dev": ("dev", ["deploy"]),
    "rm": ("release-manager", []),
    "carol": ("carol", ["release"]),
    "eve": ("eve", ["deploy"]),
}


@pytest.fixture
def tokens(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "tokens.json"
    return path, {who: add_token(path, name, scopes) for who, (name, scopes) in PEOPLE.items()}


@pytest.fixture
async def token_stack(
    fresh_stack: StackFactory, tokens: tuple[Path, dict[str, str]]
) -> AsyncIterator[Stack]:
    bursts = {"poll_burst": 1000, "not_found_burst": 1000}
    async with fresh_stack(auth="tokens", tokens_file=str(tokens[0]), **bursts) as running:
        yield running


@pytest.fixture
def people(token_stack: Stack, tokens: tuple[Path, dict[str, str]]) -> dict[str, McpClient]:
    clients = {}
    for who, token in tokens[1].items():
        client = McpClient(token_stack.http, token_stack.url)
        client.extra_headers = {"Authorization": f"Bearer {token}"}
        clients[who] = client
    return clients


async def waiting_approval(dev: McpClient, approvers: list[str] = APPROVERS) -> str:
    """A request_approval task of dev's that `approvers` decide; created by a client without the
    elicitation capability (the approvers answer elsewhere)."""
    created = await dev.call_tool(
        "request_approval", {"message": "Ship 1.3?", "approvers": approvers}, capabilities=TASKS
    )
    task_id = str(created.result["taskId"])
    await dev.wait_status(task_id, "input_required", within=10)
    return task_id


async def test_the_callers_own_answer_is_refused_with_a_message_naming_the_approvers(
    people: dict[str, McpClient],
) -> None:
    dev = people["dev"]
    task_id = await waiting_approval(dev)
    task = (await dev.get_task(task_id)).result
    assert "release-manager or anyone with scope release" in task["statusMessage"]
    refused = await dev.update_task(task_id, {"decision": APPROVE})
    assert refused.error["code"] == errors.NOT_AN_APPROVER == -32602
    assert "release-manager or anyone with scope release" in refused.error["message"]
    assert refused.error["data"] == {"key": "decision", "approvers": APPROVERS}
    assert (await dev.get_task(task_id)).result["status"] == "input_required"


async def test_the_named_approver_reads_and_answers_and_the_result_names_them(
    people: dict[str, McpClient], token_stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_server.protocol.audit")
    dev, rm = people["dev"], people["rm"]
    task_id = await waiting_approval(dev)
    seen = (await rm.get_task(task_id)).result
    assert seen["status"] == "input_required" and "decision" in seen["inputRequests"]
    assert (await rm.update_task(task_id, {"decision": APPROVE})).status == 200
    done = await dev.wait_terminal(task_id)
    assert done["result"]["content"][0]["text"] == "Decision: approved by release-manager"
    assert done["result"]["structuredContent"]["decidedByName"] == "release-manager"
    assert (await rm.get_task(task_id)).result["status"] == "completed"  # still theirs to read
    store = TemporalTaskStore(token_stack.client, token_stack.settings.task_queue)
    snapshot = await store.get(task_id)
    assert snapshot is not None
    assert snapshot.approvers == {"decision": APPROVERS}
    assert snapshot.answered_by == {"decision": "release-manager"}
    assert snapshot.requested_by == "dev"
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name.endswith("audit")]
    decision = [line for line in lines if line["event"] == "task.decision"]
    assert [(d["taskId"], d["by"], d["keys"]) for d in decision] == [
        (task_id, "release-manager", ["decision"])
    ]


async def test_anyone_holding_an_approver_scope_decides(people: dict[str, McpClient]) -> None:
    task_id = await waiting_approval(people["dev"])
    answer = {"action": "accept", "content": {"decision": "reject"}}
    assert (await people["carol"].update_task(task_id, {"decision": answer})).status == 200
    done = await people["dev"].wait_terminal(task_id)
    assert done["result"]["structuredContent"]["decision"] == "rejected"
    assert done["result"]["structuredContent"]["decidedByName"] == "carol"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {}),
        ("tasks/update", {"inputResponses": {"decision": APPROVE}}),
        ("tasks/cancel", {}),
    ],
)
async def test_a_principal_neither_owner_nor_approver_finds_nothing(
    people: dict[str, McpClient], method: str, params: dict[str, Any]
) -> None:
    task_id = await waiting_approval(people["dev"])
    eve = people["eve"]
    foreign = await eve.rpc(method, {"taskId": task_id, **params})
    unknown = await eve.rpc(method, {"taskId": "mcp-task-" + "0" * 32, **params})
    assert foreign.error == unknown.error == NOT_FOUND
    assert (await people["dev"].get_task(task_id)).result["status"] == "input_required"


async def test_an_approver_follows_the_task_on_listen_and_a_stranger_is_not_acknowledged(
    people: dict[str, McpClient],
) -> None:
    rm = people["rm"]
    task_id = await waiting_approval(people["dev"])
    strange = await people["eve"].listen({"taskIds": [task_id]})
    assert strange[0]["params"]["notifications"] == {}

    async def decide() -> None:
        assert (await rm.update_task(task_id, {"decision": APPROVE})).status == 200

    ack, *updates, final = await rm.listen({"taskIds": [task_id]}, on_ack=decide)
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}
    assert updates[-1]["params"]["status"] == "completed" and final["id"] == "listen-1"


async def test_an_approver_cannot_cancel_but_the_owner_can(people: dict[str, McpClient]) -> None:
    dev, rm = people["dev"], people["rm"]
    task_id = await waiting_approval(dev)
    refused = await rm.cancel_task(task_id)
    assert refused.error["code"] == errors.APPROVER_CANNOT_CANCEL == -31002
    assert "only by the principal that created it" in refused.error["message"]
    # Steering is the owner's too (before whether the tool takes it: nothing to learn).
    steering: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}, STEERING_EXTENSION: {}}}
    paused = await rm.rpc(
        "mcp-tasks-temporal/pause",
        {"taskId": task_id},
        capabilities=steering,
        headers={"Mcp-Name": task_id},
    )
    assert paused.error["code"] == errors.APPROVER_CANNOT_STEER
    assert "only by the principal that created it" in paused.error["message"]
    assert (await dev.get_task(task_id)).result["status"] == "input_required"
    assert (await dev.cancel_task(task_id)).status == 200
    assert (await dev.wait_terminal(task_id))["status"] == "cancelled"


async def test_each_request_is_answered_only_by_whom_it_names(
    people: dict[str, McpClient],
) -> None:
    """One task, two questions: "mine" is the caller's, "theirs" the approver's; neither may
    answer the other's, and an update that tries delivers nothing."""
    dev, rm = people["dev"], people["rm"]
    go = {"action": "accept", "content": {"go": True}}
    task_id = await dev.create_task("tests_split_decision", {"approvers": ["release-manager"]})
    await dev.wait_for(task_id, lambda t: set(t.get("inputRequests", {})) == {"mine", "theirs"})
    by_rm = await rm.update_task(task_id, {"mine": go})
    assert by_rm.error["code"] == errors.NOT_AN_APPROVER
    assert "only by the principal that created the task" in by_rm.error["message"]
    both = await dev.update_task(task_id, {"mine": go, "theirs": go})
    assert (
        both.error["code"] == errors.NOT_AN_APPROVER and "release-manager" in both.error["message"]
    )
    waiting = (await dev.get_task(task_id)).result["inputRequests"]
    assert set(waiting) == {"mine", "theirs"}  # nothing of the refused update was delivered
    assert (await rm.update_task(task_id, {"theirs": go})).status == 200
    assert (await dev.update_task(task_id, {"mine": go})).status == 200
    done = await dev.wait_terminal(task_id)
    assert done["result"]["structuredContent"] == {"mine": go, "theirs": go}
    owned = await dev.create_task("request_approval", {"message": "Mine?"})
    await dev.wait_status(owned, "input_required")
    assert (await rm.update_task(owned, {"decision": APPROVE})).error == NOT_FOUND


async def test_the_task_waits_in_visibility_under_its_approvers_ids_until_answered(
    people: dict[str, McpClient], temporal_client: Client
) -> None:
    """The inbox's query: McpApprovers holds the ids of the outstanding requests' approvers."""
    task_id = await waiting_approval(people["dev"])
    query = (
        f'McpApprovers IN ("{approver_id("release-manager")}") AND McpStatus="input_required" '
        'AND ExecutionStatus="Running"'
    )
    assert task_id in await listed(temporal_client, query, task_id, present=True)
    assert task_id in await listed(temporal_client, 'McpApprovers = "scope:release"', task_id)
    assert (await people["rm"].update_task(task_id, {"decision": APPROVE})).status == 200
    await people["dev"].wait_terminal(task_id)
    gone = f'McpApprovers = "scope:release" AND WorkflowId = "{task_id}"'
    assert task_id not in await listed(temporal_client, gone, task_id, present=False)


async def listed(client: Client, query: str, task_id: str, present: bool = True) -> list[str]:
    """The ids `query` lists, once the visibility store (which lags) shows `task_id` as
    `present` or not (or after 10 s, for the caller's assertion to say so)."""
    deadline = time.monotonic() + 10
    while True:
        ids = [w.id async for w in client.list_workflows(query)]
        if (task_id in ids) == present or time.monotonic() > deadline:
            return ids
        await asyncio.sleep(0.1)


async def test_a_local_user_without_authentication_is_every_approver(mcp: McpClient) -> None:
    """`--auth none` is one user: the approvers' answer is theirs to give."""
    task_id = await waiting_approval(mcp)
    assert (await mcp.update_task(task_id, {"decision": APPROVE})).status == 200
    done = await mcp.wait_terminal(task_id)
    assert done["result"]["structuredContent"]["decidedByName"] == "anonymous"


@pytest.mark.parametrize(
    "approvers", [[], [""], ["  "], ["scope:"], [f"p{n}" for n in range(21)], "rm"]
)
async def test_a_bad_approvers_argument_is_refused(asgi_mcp: McpClient, approvers: object) -> None:
    reply = await asgi_mcp.call_tool("request_approval", {"message": "x", "approvers": approvers})
    assert reply.error["code"] == errors.INVALID_PARAMS and "approvers" in reply.error["message"]


def test_the_default_approvers_setting_is_validated() -> None:
    env = {"MCP_TASKS_APPROVAL_APPROVERS": "release-manager, scope:release"}
    assert Settings.from_env(env).approval_approvers == ("release-manager", "scope:release")
    with pytest.raises(ConfigError, match="MCP_TASKS_APPROVAL_APPROVERS='scope:'"):
        Settings.from_env({"MCP_TASKS_APPROVAL_APPROVERS": "scope:"})


# ----- who may name approvers --------------------------------------------


def _client(stack: Stack, token: str) -> McpClient:
    client = McpClient(stack.http, stack.url)
    client.extra_headers = {"Authorization": f"Bearer {token}"}
    return client


async def _ask(client: McpClient, approvers: list[str] | None = None) -> Any:
    arguments: dict[str, Any] = {"message": "Ship 1.3?"}
    if approvers is not None:
        arguments["approvers"] = approvers
    return await client.call_tool("request_approval", arguments, capabilities=TASKS)


@pytest.mark.parametrize("herself", [["dev"], ["scope:deploy"], ["release-manager", "dev"]])
async def test_an_agent_cannot_name_itself_its_own_approver(
    people: dict[str, McpClient], herself: list[str]
) -> None:
    """dev (scope deploy) names itself, by name or by a scope it holds: refused, no task."""
    refused = await _ask(people["dev"], herself)
    assert refused.status == 403 and refused.error["code"] == errors.APPROVERS_NOT_ALLOWED
    assert "you may not name yourself" in refused.error["message"]
    assert refused.error["data"] == {"approvers": herself, "policy": "callers"}


async def test_the_operators_approvers_win_over_the_callers(
    temporal_client: Client, pipelines_dir: Path, tokens: tuple[Path, dict[str, str]]
) -> None:
    """With MCP_TASKS_APPROVAL_APPROVERS set (and no MCP_TASKS_APPROVER_NAMING), an agent that
    names its accomplice is refused; without `approvers`, the operator's approver decides."""
    settings = Settings(pipelines_dir=str(pipelines_dir), approval_approvers=("release-manager",))
    registry = load_toolsets("conformance", ["mcp_server.tools.demo"], settings)
    path, token = tokens
    overrides = {
        "auth": "tokens",
        "tokens_file": str(path),
        "approval_approvers": ("release-manager",),
    }
    async with running_stack(temporal_client, registry, **overrides) as stack:
        dev, eve = _client(stack, token["dev"]), _client(stack, token["eve"])
        refused = await _ask(dev, ["eve"])
        assert refused.error["code"] == errors.APPROVERS_NOT_ALLOWED
        assert refused.error["data"]["policy"] == "operator"
        task_id = (await _ask(dev)).result["taskId"]
        await dev.wait_status(task_id, "input_required", within=10)
        assert (await eve.update_task(task_id, {"decision": APPROVE})).error["code"] == (
            errors.NOT_AN_APPROVER
        )
        rm = _client(stack, token["rm"])
        assert (await rm.update_task(task_id, {"decision": APPROVE})).status == 200


async def test_under_the_scope_policy_only_holders_of_the_naming_scope_name_approvers(
    fresh_stack: StackFactory, tokens: tuple[Path, dict[str, str]]
) -> None:
    path, token = tokens
    lead = add_token(path, "lead", ["approvers"])
    policy = {"approver_naming": "scope", "approver_naming_scope": "approvers"}
    async with fresh_stack(auth="tokens", tokens_file=str(path), **policy) as stack:
        refused = await _ask(_client(stack, token["dev"]), ["release-manager"])
        assert refused.error["code"] == errors.APPROVERS_NOT_ALLOWED
        assert "needs the scope 'approvers'" in refused.error["message"]
        named = await _ask(_client(stack, lead), ["release-manager"])
        assert named.result["resultType"] == "task"


async def test_105_requests_naming_an_approver_are_cut_off_by_the_approver_request_limit(
    fresh_stack: StackFactory, tokens: tuple[Path, dict[str, str]]
) -> None:
    """The attack that buried release-manager's inbox: past its burst, eve's requests are
    refused (RATE_LIMITED, 429, Retry-After) and start no task, so fire no webhook."""
    path, token = tokens
    limits = {"approver_request_burst": 5, "approver_request_rate_per_minute": 1}
    async with fresh_stack(auth="tokens", tokens_file=str(path), **limits) as stack:
        eve = _client(stack, token["eve"])
        replies = [await _ask(eve, ["release-manager"]) for _ in range(105)]
        created = [r for r in replies if "result" in r.body]
        refused = [r for r in replies if r not in created]
        assert len(created) == 5
        assert {r.error["code"] for r in refused} == {errors.RATE_LIMITED}
        assert {r.status for r in refused} == {429} and "Retry-After" in refused[0].headers
        assert "requests for approvers" in refused[0].error["message"]
        # Another principal's request is not held back by eve's.
        assert (await _ask(_client(stack, token["dev"]), ["release-manager"])).status == 200
        for reply in created:
            await eve.cancel_task(reply.result["taskId"])
