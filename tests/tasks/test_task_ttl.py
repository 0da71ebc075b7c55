"""How long a task stays readable (wire §2.11): the rules of mcp_server/tasks/ttl.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mcp_server.tasks.snapshots import TaskSnapshot
from mcp_server.tasks.ttl import MAX_CLOSED_GRACE_MS, is_expired, kept_for, ttl_after_close
from mcp_tasks.contracts.task_status import TaskStatus

CREATED = datetime(2026, 8, 1, 10, 30, tzinfo=UTC)
HOUR_MS = 3_600_000


def snapshot(status: TaskStatus, ttl_ms: int | None) -> TaskSnapshot:
    created = "2026-08-01T10:30:00.000Z"
    return TaskSnapshot(
        task_id="mcp-task-1",
        tool="slow_compute",
        owner="owner",
        created_at=created,
        last_updated_at=created,
        ttl_ms=ttl_ms,
        poll_interval_ms=None,
        status=status,
    )


def at(ms: int) -> datetime:
    return CREATED + timedelta(milliseconds=ms)


def test_a_closed_task_expires_at_its_ttl() -> None:
    assert not is_expired(snapshot("completed", HOUR_MS), at(HOUR_MS - 1))
    assert is_expired(snapshot("completed", HOUR_MS), at(HOUR_MS))


def test_a_task_still_running_at_its_ttl_gets_the_grace_of_a_task_closing_then() -> None:
    grace_ends = kept_for(HOUR_MS)
    assert grace_ends == HOUR_MS + MAX_CLOSED_GRACE_MS  # half the TTL, at most 10 minutes
    assert not is_expired(snapshot("working", HOUR_MS), at(grace_ends - 1))
    assert is_expired(snapshot("input_required", HOUR_MS), at(grace_ends))


def test_a_task_without_a_ttl_never_expires() -> None:
    assert not is_expired(snapshot("completed", None), at(100 * 365 * 24 * HOUR_MS))


def test_a_task_that_closes_late_in_its_ttl_stays_readable_a_grace_longer() -> None:
    created, closed = "2026-08-01T10:30:00.000Z", "2026-08-01T11:29:00.000Z"  # after 59 min
    assert ttl_after_close(created, closed, HOUR_MS) == 59 * 60_000 + MAX_CLOSED_GRACE_MS
    assert ttl_after_close(created, "2026-08-01T10:31:00.000Z", HOUR_MS) == HOUR_MS
    assert ttl_after_close(created, closed, None) is None
