"""Task access: the owner and the TTL decide, and every "not found" leaves at one deadline."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import Client

from mcp_server.tasks.access import MAX_TASK_ID_LENGTH, find_task, wait_until
from mcp_server.tasks.not_found import NOT_FOUND_FLOOR_S
from mcp_server.tasks.store import TemporalTaskStore
from mcp_tasks.identity import ANONYMOUS, Principal
from tests.conftest import Stack
from tests.mcp_client import McpClient

OWNER = ANONYMOUS.digest  # whom the test client's tasks belong to
STRANGER = Principal("stranger").digest
MISSING = "mcp-task-" + "0" * 32


def now() -> datetime:
    return datetime.now(UTC)


def a_year_from_now() -> datetime:
    return datetime.now(UTC) + timedelta(days=365)


@pytest.fixture
def store(temporal_client: Client, stack: Stack) -> TemporalTaskStore:
    """A store of its own: its not-found deadline learns from this test's lookups only."""
    return TemporalTaskStore(temporal_client, stack.settings.task_queue)


@pytest.fixture
async def waiting_task(mcp: McpClient) -> str:
    task_id = await mcp.create_task("confirm_delete", {"filename": "access.txt"})
    await mcp.wait_status(task_id, "input_required", within=5)
    return task_id


async def test_wait_until_never_answers_before_its_deadline() -> None:
    # How late it answers (well under a plain asyncio.sleep's 0.5-1.1 ms) is a measurement,
    # not a property: it belongs to the benchmark, not to a test on a shared machine.
    for _ in range(100):
        deadline = time.perf_counter() + random.uniform(0.001, 0.006)
        await wait_until(deadline)
        assert time.perf_counter() >= deadline


async def test_only_the_owner_finds_a_task(store: TemporalTaskStore, waiting_task: str) -> None:
    found = await find_task(store, waiting_task, OWNER, now)
    assert found is not None and found.status == "input_required"
    assert await find_task(store, waiting_task, STRANGER, now) is None


@pytest.mark.parametrize(
    "task_id",
    ["mcp-task-" + "f" * 32, "x" * (MAX_TASK_ID_LENGTH + 1), "mcp-task-\n"],
    ids=["missing", "too-long", "unprintable"],
)
async def test_a_task_id_that_names_no_task_is_not_found(
    store: TemporalTaskStore, task_id: str
) -> None:
    assert await find_task(store, task_id, OWNER, now) is None


async def test_a_task_past_its_ttl_and_grace_is_not_found_even_by_its_owner(
    store: TemporalTaskStore, waiting_task: str
) -> None:
    assert await find_task(store, waiting_task, OWNER, a_year_from_now) is None


@pytest.mark.parametrize("kind", ["missing", "foreign", "expired", "malformed"])
async def test_every_not_found_answer_waits_for_the_common_deadline(
    store: TemporalTaskStore, waiting_task: str, kind: str
) -> None:
    lookups: dict[str, tuple[str, str, Callable[[], datetime]]] = {
        "missing": (MISSING, OWNER, now),
        "foreign": (waiting_task, STRANGER, now),
        "expired": (waiting_task, OWNER, a_year_from_now),
        "malformed": ("\x00", OWNER, now),
    }
    task_id, owner, clock = lookups[kind]
    started = time.perf_counter()
    assert await find_task(store, task_id, owner, clock) is None
    assert time.perf_counter() - started >= NOT_FOUND_FLOOR_S


async def test_only_reads_of_running_tasks_teach_the_deadline(
    store: TemporalTaskStore, waiting_task: str
) -> None:
    """A foreign lookup is slower than a missing one: if "not found" answers moved the
    deadline, the time of the next answer would tell what the last lookup found."""
    deadline = store.not_found
    before = deadline.after(0.0)
    for task_id, owner in [(waiting_task, STRANGER), (MISSING, STRANGER), (MISSING, OWNER)]:
        assert await find_task(store, task_id, owner, now) is None
    assert deadline.after(0.0) == before
    assert await find_task(store, waiting_task, OWNER, now) is not None
    deadline.floor_s = 0  # so that the learnt part shows
    assert deadline.after(0.0) > 0
