"""The contract of an `InboxStore` (mcp_server/tasks/inbox_store.py): each test runs on the
Temporal one (the session's dev server, a worker on a fresh task queue) and on the in-memory
one of the in-process tier (tests/fakes/memory_inbox.py), so the inbox's pages in process
(tests/inbox/test_inbox_in_process.py) read what they would read from Temporal.

Temporal's visibility store lags behind a task's changes: a list is read again until it shows
the change (bounded). Owners and approvers are the test's own: the namespace is shared.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import pytest
from temporalio.client import Client

from mcp_server.tasks.errors import TaskError
from mcp_server.tasks.inbox_store import InboxStore, TemporalInboxStore
from mcp_server.tasks.store import TaskStore, new_task_id
from mcp_server.tasks.waiting import Waiting
from mcp_tasks.contracts.approvers import approver_id
from mcp_tasks.contracts.task_state import SubmitInput
from tests.contract.test_task_store_contract import ACCEPT, a_task, status_of, until
from tests.fakes.memory_inbox import MemoryInboxStore
from tests.fakes.memory_store import MemoryTaskStore

Stores = tuple[TaskStore, InboxStore]


@pytest.fixture(params=[pytest.param("temporal", marks=pytest.mark.e2e), "memory"])
def stores(request: pytest.FixtureRequest) -> Stores:
    if request.param == "temporal":
        client: Client = request.getfixturevalue("temporal_client")
        return request.getfixturevalue("temporal_store"), TemporalInboxStore(client)
    memory: MemoryTaskStore = request.getfixturevalue("memory_store")
    return memory, MemoryInboxStore(memory)


def someone() -> str:
    return f"principal-{uuid.uuid4().hex[:12]}"


async def listed(
    inbox: InboxStore, task_id: str, present: bool, owner: str, *ids: str, every: bool = False
) -> Waiting | None:
    """The task in `owner`'s list (with approver ids `ids`), once it is there (or gone)."""

    async def read() -> Waiting | None:
        waiting, _ = await inbox.waiting_all(owner, frozenset(ids), every)
        return next((w for w in waiting if w.task_id == task_id), None)

    found: Waiting | None = await until(read, lambda w: (w is not None) == present)
    return found


async def test_a_task_asking_its_owner_is_in_the_owners_list_until_answered(
    stores: Stores,
) -> None:
    tasks, inbox = stores
    owner, other = someone(), someone()
    task = a_task(owner)
    await tasks.create(task, "ConfirmDelete")
    await status_of(tasks, task.task_id, "input_required")
    waiting = await listed(inbox, task.task_id, True, owner)
    assert waiting is not None and waiting.mine and waiting.tool == "confirm_delete"
    assert waiting.request_keys == ("confirm",) and waiting.created_at == task.created_at
    assert (
        waiting.snapshot.status == "input_required" and "confirm" in waiting.snapshot.input_requests
    )
    others, _ = await inbox.waiting_all(other)
    assert task.task_id not in {w.task_id for w in others}
    await tasks.submit_input(task.task_id, SubmitInput(responses={"confirm": ACCEPT}, by="alice"))
    await listed(inbox, task.task_id, False, owner)


async def test_a_task_naming_approvers_is_theirs_to_decide_and_not_someone_elses(
    stores: Stores,
) -> None:
    tasks, inbox = stores
    owner, approver, stranger = someone(), someone(), someone()
    task = a_task(
        owner, tool="request_approval", arguments={"message": "Ship?", "approvers": [approver]}
    )
    await tasks.create(task, "RequestApproval")
    await status_of(tasks, task.task_id, "input_required")
    theirs = await listed(inbox, task.task_id, True, stranger, approver_id(approver))
    assert theirs is not None and not theirs.mine and theirs.request_keys == ("decision",)
    # The local user is every approver: it sees every task that names approvers.
    assert await listed(inbox, task.task_id, True, stranger, every=True) is not None
    others, _ = await inbox.waiting_all(stranger, frozenset({approver_id(someone())}))
    assert task.task_id not in {w.task_id for w in others}


async def test_the_decisions_say_what_was_answered_by_whom_and_when(stores: Stores) -> None:
    tasks, inbox = stores
    task = a_task(someone())
    await tasks.create(task, "ConfirmDelete")
    await status_of(tasks, task.task_id, "input_required")
    await tasks.submit_input(task.task_id, SubmitInput(responses={"confirm": ACCEPT}, by="alice"))
    await status_of(tasks, task.task_id, "completed")
    decided = await inbox.decisions(task.task_id, {"confirm", "never-asked"})
    assert set(decided) == {"confirm"}
    assert (decided["confirm"].answer, decided["confirm"].by) == (ACCEPT, "alice")
    at = datetime.fromisoformat(decided["confirm"].at.replace("Z", "+00:00"))
    assert at.utcoffset() is not None and decided["confirm"].at.endswith("Z")
    assert at >= datetime.fromisoformat(task.created_at.replace("Z", "+00:00"))
    assert await inbox.decisions(task.task_id, set()) == {}


async def test_an_answer_without_a_name_was_given_by_someone(stores: Stores) -> None:
    tasks, inbox = stores
    task = a_task(someone())
    await tasks.create(task, "ConfirmDelete")
    await status_of(tasks, task.task_id, "input_required")
    await tasks.submit_input(task.task_id, SubmitInput(responses={"confirm": ACCEPT}))
    await status_of(tasks, task.task_id, "completed")
    assert (await inbox.decisions(task.task_id, {"confirm"}))["confirm"].by == "someone"


async def test_the_arguments_are_the_start_arguments_without_the_secret_ones(
    stores: Stores,
) -> None:
    tasks, inbox = stores
    arguments: dict[str, Any] = {"filename": "notes.txt", "token": "s3cret"}
    task = a_task(someone(), arguments=arguments, secret_arguments=["token"])
    await tasks.create(task, "ConfirmDelete")
    assert await inbox.arguments(task.task_id) == {"filename": "notes.txt"}


async def test_the_history_of_a_missing_task_is_a_task_layer_error(stores: Stores) -> None:
    _, inbox = stores
    with pytest.raises(TaskError):
        await inbox.arguments(new_task_id())
    with pytest.raises(TaskError):
        await inbox.decisions(new_task_id(), {"confirm"})
