"""The contract of a `TaskStore` (mcp_server/tasks/store.py): each test runs on the Temporal
store (the session's dev server, a worker on a fresh task queue) and on the in-memory store of
the in-process tier (tests/fakes/memory_store.py), so the fake cannot drift from the real one.

A store says "not found" with None (task access turns it into `TaskNotFound`, access.py), and
raises only task-layer errors: `IdempotencyConflict`, `QuotaExceeded`, ValueError for a
malformed listing cursor.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mcp_server.protocol.frame.errors import error_object
from mcp_server.tasks.idempotency import IdempotencyConflict
from mcp_server.tasks.quota import QuotaExceeded
from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.store import TaskStore, new_task_id
from mcp_server.tasks.ttl import is_expired
from mcp_tasks.contracts.task_state import AuditStamp, SubmitInput, TaskInput, iso_timestamp
from tests.fakes.clock import SettableClock
from workflows.steering import PAUSE_SIGNAL, RESUME_SIGNAL, STEER_SIGNAL, SteerInput

ELICIT: dict[str, Any] = {"elicitation": {}}
ACCEPT = {"action": "accept", "content": {"confirm": True}}
STAMP = AuditStamp(principal="someone")


@pytest.fixture(params=[pytest.param("temporal", marks=pytest.mark.e2e), "memory"])
def store(request: pytest.FixtureRequest) -> TaskStore:
    found: TaskStore = request.getfixturevalue(f"{request.param}_store")
    return found


def a_task(owner: str = "owner-a", tool: str = "confirm_delete", **fields: Any) -> TaskInput:
    arguments = {"filename": "notes.txt"} if tool == "confirm_delete" else {}
    values: dict[str, Any] = {
        "task_id": new_task_id(),
        "tool": tool,
        "arguments": arguments,
        "created_at": iso_timestamp(datetime.now(UTC)),
        "ttl_ms": None,
        "poll_interval_ms": 500,
        "owner": owner,
        "client_capabilities": ELICIT,
        **fields,
    }
    return TaskInput(**values)


async def until(
    read: Callable[[], Awaitable[Any]], done: Callable[[Any], bool], within: float = 20
) -> Any:
    """`read()` again until `done` holds of its value (bounded)."""
    async with asyncio.timeout(within):
        while True:
            value = await read()
            if done(value):
                return value
            await asyncio.sleep(0.05)


async def status_of(store: TaskStore, task_id: str, status: str) -> TaskSnapshot:
    snapshot: TaskSnapshot = await until(
        lambda: store.get(task_id), lambda s: s is not None and s.status == status
    )
    return snapshot


async def test_a_created_task_is_working_and_readable_by_its_owner(store: TaskStore) -> None:
    task = a_task()
    created = await store.create(task, "ConfirmDelete")
    assert (created.task_id, created.owner, created.status) == (task.task_id, "owner-a", "working")
    read = await store.get(task.task_id, "owner-a")
    assert read is not None and read.task_id == task.task_id and read.tool == "confirm_delete"
    assert read.poll_interval_ms == 500 and read.created_at == task.created_at


async def test_a_missing_task_and_someone_elses_read_as_none(store: TaskStore) -> None:
    task = a_task()
    await store.create(task, "ConfirmDelete")
    assert await store.get(new_task_id()) is None
    assert await store.get(task.task_id, "owner-b") is None


async def test_a_question_is_listed_until_answered_then_the_task_completes(
    store: TaskStore,
) -> None:
    task = a_task()
    await store.create(task, "ConfirmDelete")
    asking = await status_of(store, task.task_id, "input_required")
    assert list(asking.input_requests) == ["confirm"]
    assert asking.input_requests["confirm"]["method"] == "elicitation/create"
    await store.submit_input(task.task_id, SubmitInput({"confirm": ACCEPT}, by="Ann"))
    done = await status_of(store, task.task_id, "completed")
    assert done.input_requests == {} and done.result is not None
    assert done.result["structuredContent"] == {"deleted": True}
    assert done.answered_by == {"confirm": "Ann"}


async def test_an_answer_to_a_key_not_asked_is_ignored(store: TaskStore) -> None:
    task = a_task()
    await store.create(task, "ConfirmDelete")
    await status_of(store, task.task_id, "input_required")
    await store.submit_input(task.task_id, SubmitInput({"other": ACCEPT}))
    await store.submit_input(task.task_id, SubmitInput({"confirm": ACCEPT}))
    done = await status_of(store, task.task_id, "completed")
    assert done.result is not None and done.result["structuredContent"] == {"deleted": True}


async def test_a_tool_error_completes_and_a_protocol_error_fails_with_its_code(
    store: TaskStore,
) -> None:
    tool_error, protocol_error = a_task(tool="failing_job"), a_task(tool="protocol_error_job")
    await store.create(tool_error, "FailingJob")
    await store.create(protocol_error, "ProtocolErrorJob")
    completed = await status_of(store, tool_error.task_id, "completed")
    assert completed.result is not None and completed.result["isError"] is True
    failed = await status_of(store, protocol_error.task_id, "failed")
    assert failed.error is not None and error_object(failed.error)["code"] == -32603
    assert failed.status_message == f"Task failed: {failed.error.message}"


async def test_cancel_stops_a_running_task_and_is_a_no_op_once_closed_or_missing(
    store: TaskStore,
) -> None:
    task = a_task(tool="slow_compute", arguments={"seconds": 3600})
    await store.create(task, "SlowCompute")
    await store.cancel(task.task_id, STAMP)
    cancelled = await status_of(store, task.task_id, "cancelled")
    assert cancelled.status_message == "Cancelled" and cancelled.result is None
    await store.cancel(task.task_id, STAMP)
    await store.cancel(new_task_id(), STAMP)
    await store.submit_input(new_task_id(), SubmitInput({"confirm": ACCEPT}))
    again = await store.get(task.task_id)
    assert again is not None and again.status == "cancelled"


async def test_a_pause_shows_until_resumed_and_steering_a_closed_or_missing_task_is_a_no_op(
    store: TaskStore,
) -> None:
    task = a_task()
    await store.create(task, "ConfirmDelete")
    await status_of(store, task.task_id, "input_required")
    await store.steer(task.task_id, PAUSE_SIGNAL, STAMP)
    paused = await until(lambda: store.get(task.task_id), lambda s: s is not None and s.paused)
    assert paused.status == "input_required"  # the status underneath stays as it was
    await store.steer(task.task_id, RESUME_SIGNAL, STAMP)
    await until(lambda: store.get(task.task_id), lambda s: s is not None and not s.paused)
    await store.submit_input(task.task_id, SubmitInput({"confirm": ACCEPT}))
    done = await status_of(store, task.task_id, "completed")
    assert not done.paused
    await store.steer(task.task_id, STEER_SIGNAL, SteerInput("too late"))
    await store.steer(new_task_id(), PAUSE_SIGNAL, STAMP)
    again = await store.get(task.task_id)
    assert again is not None and again.status == "completed" and not again.paused


async def test_an_idempotency_key_returns_its_task_and_refuses_another_call(
    store: TaskStore,
) -> None:
    task = a_task(call_digest="digest-1")
    first = await store.create(task, "ConfirmDelete")
    again = await store.create(task, "ConfirmDelete")
    assert again.task_id == first.task_id
    with pytest.raises(IdempotencyConflict):
        await store.create(a_task(task_id=task.task_id, call_digest="digest-2"), "ConfirmDelete")


async def test_a_full_quota_refuses_the_next_task(store: TaskStore) -> None:
    owner = f"quota-{uuid.uuid4()}"
    await store.create(a_task(owner), "ConfirmDelete", quota=1)
    with pytest.raises(QuotaExceeded) as refused:
        await store.create(a_task(owner), "ConfirmDelete", quota=1)
    assert refused.value.limit == 1


async def test_listing_pages_through_the_owners_tasks_only(store: TaskStore) -> None:
    owner = f"lister-{uuid.uuid4()}"
    mine = {(await store.create(a_task(owner), "ConfirmDelete")).task_id for _ in range(3)}
    await store.create(a_task(f"other-{uuid.uuid4()}"), "ConfirmDelete")

    async def every_page() -> set[str]:
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            page, cursor = await store.list_owned(owner, 2, cursor)
            assert len(page) <= 2 and all(s.owner == owner for s in page)
            seen |= {s.task_id for s in page}
            if cursor is None:
                return seen

    assert await until(every_page, lambda seen: seen == mine) == mine
    with pytest.raises(ValueError):
        await store.list_owned(owner, 2, "not base64!")


async def test_a_session_lists_the_tasks_it_created_and_a_reader_wakes_for_the_next(
    store: TaskStore,
) -> None:
    session, other = f"session-{uuid.uuid4().hex}", f"session-{uuid.uuid4().hex}"
    owner = f"owner-{uuid.uuid4()}"
    first = a_task(owner, session=session)
    await store.create(first, "ConfirmDelete")
    await store.create(a_task(owner, session=other), "ConfirmDelete")
    await store.create(a_task(owner), "ConfirmDelete")  # created outside any session
    ids, cursor = await read_session(store, session, b"", 1)
    assert ids == [first.task_id]
    reading = asyncio.create_task(read_session(store, session, cursor, 1))
    await asyncio.sleep(0.2)  # the reader is waiting (a long-poll) when the next task comes
    second = a_task(owner, session=session)
    await store.create(second, "ConfirmDelete")
    async with asyncio.timeout(20):
        ids, _ = await reading
    assert ids == [second.task_id]


async def read_session(
    store: TaskStore, session: str, cursor: bytes, want: int
) -> tuple[list[str], bytes]:
    """Read `session`'s list from `cursor` until `want` task ids came (bounded)."""
    found: list[str] = []
    async with asyncio.timeout(20):
        while len(found) < want:
            ids, cursor = await store.session_tasks(session, cursor)
            found += ids
    return found, cursor


async def test_events_are_counted_until_the_task_closes(store: TaskStore) -> None:
    assert await store.wait_for_events(new_task_id(), b"") is None
    task = a_task()
    await store.create(task, "ConfirmDelete")
    count, cursor = await store.wait_for_events(task.task_id, b"") or (0, None)
    assert count > 0 and cursor is not None
    await status_of(store, task.task_id, "input_required")
    await store.submit_input(task.task_id, SubmitInput({"confirm": ACCEPT}))
    await status_of(store, task.task_id, "completed")
    closed: tuple[int, bytes | None] | None = await until(
        lambda: store.wait_for_events(task.task_id, cursor or b""), lambda r: r[1] is None
    )
    assert closed is not None and closed[0] > 0


async def test_each_read_has_a_sequence_no_smaller_than_the_one_before(store: TaskStore) -> None:
    task = a_task()
    await store.create(task, "ConfirmDelete")
    asking = await status_of(store, task.task_id, "input_required")
    again = await store.get(task.task_id)
    assert asking.sequence > 0 and again is not None and again.sequence >= asking.sequence
    await store.submit_input(task.task_id, SubmitInput({"confirm": ACCEPT}))
    done = await status_of(store, task.task_id, "completed")
    assert done.sequence > asking.sequence
    closed = await store.get(task.task_id)
    assert closed is not None and closed.sequence == done.sequence


async def test_the_related_task_ids_a_task_started_with_are_read_back(store: TaskStore) -> None:
    task = a_task(related_task_ids=["mcp-task-earlier"])
    await store.create(task, "ConfirmDelete")
    asking = await status_of(store, task.task_id, "input_required")
    assert asking.related_task_ids == ["mcp-task-earlier"]


async def test_a_partial_answer_leaves_only_the_other_question_outstanding_at_once(
    store: TaskStore,
) -> None:
    task = a_task(tool="multi_input")
    await store.create(task, "MultiInput")
    asking: TaskSnapshot = await until(
        lambda: store.get(task.task_id), lambda s: s is not None and len(s.input_requests) == 2
    )
    assert set(asking.input_requests) == {"name", "confirm"}
    name = {"action": "accept", "content": {"name": "Ann"}}
    await store.submit_input(task.task_id, SubmitInput({"name": name}))
    after = await store.get(task.task_id)
    assert after is not None and after.status == "input_required"
    assert list(after.input_requests) == ["confirm"]
    await store.submit_input(task.task_id, SubmitInput({"confirm": ACCEPT}))
    await status_of(store, task.task_id, "completed")


async def test_a_declined_answer_reaches_the_task_as_given(store: TaskStore) -> None:
    task = a_task()
    await store.create(task, "ConfirmDelete")
    await status_of(store, task.task_id, "input_required")
    await store.submit_input(task.task_id, SubmitInput({"confirm": {"action": "decline"}}))
    done = await status_of(store, task.task_id, "completed")
    assert done.result is not None and done.result["structuredContent"] == {"deleted": False}


async def test_a_cancelled_task_that_was_asking_has_no_question_left(store: TaskStore) -> None:
    task = a_task()
    await store.create(task, "ConfirmDelete")
    await status_of(store, task.task_id, "input_required")
    await store.cancel(task.task_id, STAMP)
    cancelled = await status_of(store, task.task_id, "cancelled")
    assert cancelled.input_requests == {} and cancelled.result is None


async def test_a_completed_task_keeps_its_result_and_says_its_first_line(
    store: TaskStore,
) -> None:
    task = a_task(tool="slow_compute", arguments={"seconds": 0, "label": "summary"})
    await store.create(task, "SlowCompute")
    done = await status_of(store, task.task_id, "completed")
    assert done.status_message == "Completed: Computed 'summary' in 0 s"
    await store.cancel(task.task_id, STAMP)
    await store.submit_input(task.task_id, SubmitInput({"confirm": ACCEPT}))
    again = await store.get(task.task_id)
    assert again is not None and again.status == "completed" and again.result == done.result


async def test_a_closed_task_past_its_ttl_reads_as_expired_or_not_at_all(
    store: TaskStore, clock: SettableClock
) -> None:
    task = a_task(tool="tests_short_lived", ttl_ms=60_000)
    await store.create(task, "TestsShortLived")
    done = await status_of(store, task.task_id, "completed")
    assert done.ttl_ms == 60_000  # closed early in its TTL: no grace added
    clock.advance(timedelta(milliseconds=59_000))
    still = await store.get(task.task_id)
    assert still is not None and still.status == "completed" and still.result == done.result
    clock.advance(timedelta(seconds=2))
    # Found expired, it may still be read (Temporal deletes it in the background) but as
    # expired, which task access (access.py) answers as "not found".
    after = await store.get(task.task_id)
    assert after is None or is_expired(after, clock())
