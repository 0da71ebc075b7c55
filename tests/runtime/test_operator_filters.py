"""What `mcp-tasks tasks` puts into a visibility query and into an answer, before any process
runs (the whole commands: tests/runtime/test_operator_cli.py)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

import pytest

from mcp_server.runtime.operator_answers import (
    InvalidAnswer,
    action_of,
    content_from_flags,
    parse_value,
)
from mcp_server.runtime.operator_args import duration
from mcp_server.runtime.operator_views import step_line
from mcp_server.tasks.listing import InvalidFilter, TaskFilter
from mcp_tasks.identity import Principal

BASE = 'McpTool IS NOT NULL AND ExecutionStatus!="ContinuedAsNew"'


def test_each_filter_becomes_one_condition() -> None:
    assert TaskFilter().query() == BASE
    assert TaskFilter(status="failed").query() == (
        f'{BASE} AND ExecutionStatus IN ("Failed", "Terminated", "TimedOut")'
    )
    alice = Principal("alice").digest
    assert TaskFilter(tool="request_approval", owner="alice").query() == (
        f'{BASE} AND McpTool="request_approval" AND McpOwner="{alice}"'
    )
    assert TaskFilter(owner=alice).query() == f'{BASE} AND McpOwner="{alice}"'
    assert TaskFilter(approver="alice").query() == f'{BASE} AND McpApprovers="principal:{alice}"'
    assert TaskFilter(approver="scope:release").query() == (
        f'{BASE} AND McpApprovers="scope:release"'
    )


def test_the_task_queue_and_a_wait_threshold_become_conditions() -> None:
    assert TaskFilter(task_queue="mcp-tasks").query() == f'{BASE} AND TaskQueue="mcp-tasks"'
    before = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    waiting = (
        'ExecutionStatus="Running" AND McpStatus="input_required" AND '
        '(McpWaitingSince < "2026-12-01T09:30:00.000Z" OR McpWaitingSince IS NULL)'
    )
    assert TaskFilter(waiting_before=before).query() == f"{BASE} AND {waiting}"
    assert TaskFilter(status="input_required", waiting_before=before).query() == (
        f"{BASE} AND {waiting}"
    )


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("2h", 7200), ("3d", 259200)]
)
def test_a_wait_threshold_is_a_number_and_a_unit(text: str, seconds: int) -> None:
    assert duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "2", "h", "1.5h", "-1h", "2w"])
def test_a_wait_threshold_without_a_known_unit_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_a_principal_reaches_the_query_only_as_its_digest() -> None:
    odd = 'x" OR McpOwner!="y'
    assert TaskFilter(owner=odd).query() == f'{BASE} AND McpOwner="{Principal(odd).digest}"'


@pytest.mark.parametrize(
    "where",
    [
        TaskFilter(status="bogus"),
        TaskFilter(tool='x" OR McpTool!="y'),
        TaskFilter(tool="a\\b"),
        TaskFilter(tool="line\nbreak"),
        TaskFilter(tool=""),
        TaskFilter(approver="scope:a'b"),
        TaskFilter(approver="scope:"),
        TaskFilter(owner=""),
        TaskFilter(task_queue='q" OR TaskQueue!="r'),
        TaskFilter(task_queue=""),
        TaskFilter(status="completed", waiting_before=datetime(2026, 12, 1, tzinfo=UTC)),
    ],
)
def test_values_a_query_cannot_hold_are_refused(where: TaskFilter) -> None:
    with pytest.raises(InvalidFilter):
        where.query()


def test_set_values_are_read_as_the_form_types_say() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
            "s": {"type": "string"},
        },
    }
    content = content_from_flags(
        schema, ["ok=yes", "n=3", "x=2.5", "tags=a, b", "s=3=4"], '{"s": "ignored"}'
    )
    assert content == {"ok": True, "n": 3, "x": 2.5, "tags": ["a", "b"], "s": "3=4"}
    for assignment, problem in [
        ("ok=perhaps", 'field "ok" must be a boolean'),
        ("n=three", 'field "n" must be an integer'),
        ("x=nan", 'field "x" must be a number'),
        ("other=1", 'field "other" is not in the form (its fields: ok, n, x, tags, s)'),
        ("novalue", "expected field=value"),
    ]:
        with pytest.raises(InvalidAnswer, match=problem.replace("(", r"\(").replace(")", r"\)")):
            content_from_flags(schema, [assignment], None)
    with pytest.raises(InvalidAnswer, match="--json must be a JSON object"):
        content_from_flags(schema, [], "[1]")
    assert parse_value("n", {"type": "integer"}, "2.0") == 2.0  # the form check then refuses it


@pytest.mark.parametrize(
    ("typed", "action"),
    [
        ("", "accept"),
        ("y", "accept"),
        ("YES", "accept"),
        ("a", "accept"),
        (" accept ", "accept"),
        ("n", "decline"),
        ("No", "decline"),
        ("d", "decline"),
        ("decline", "decline"),
        ("sure", None),
        ("cancel", None),
    ],
)
def test_the_terminal_reads_y_and_n_as_accept_and_decline(typed: str, action: str | None) -> None:
    assert action_of(typed) == action


def test_a_step_with_one_naive_timestamp_is_shown_with_its_duration() -> None:
    step = {
        "name": "build",
        "status": "succeeded",
        "startedAt": "2026-12-04T10:00:00",
        "endedAt": "2026-12-04T10:00:03.5Z",
    }
    assert step_line(1, step) == "  1. build: succeeded, 3.5 s"
