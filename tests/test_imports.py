"""`import_records`: CSV / JSON Lines into SQLite, chunked, idempotent, cancellable, crash-safe."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType, PendingActivityState
from temporalio.client import Client, WorkflowHandle

from activities.import_records import AREAS
from mcp_server.protocol.frame import errors
from mcp_server.runtime.devserver import TemporalDevServer
from mcp_server.tools.loading import load_toolsets
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.identity import ANONYMOUS
from mcp_tasks.settings import Settings
from tests.client_2025 import Client2025
from tests.conftest import Stack, StackFactory, running_stack
from tests.dev_process import WorkerProcess
from tests.listen_stream import ListenStream, task_status
from tests.mcp_client import McpClient
from tests.workflows.test_task_state import replay


def csv_file(directory: Path, rows: int, extra: str = "") -> str:
    name = f"people-{uuid.uuid4().hex[:8]}.csv"
    lines = ["id,name,city"] + [f"{i},person {i},city {i % 7}" for i in range(1, rows + 1)]
    (directory / name).write_text("\n".join(lines) + "\n" + extra)
    return name


def area(import_dir: Path) -> Path:
    """Where the anonymous caller's databases are (`--auth none`: every caller is it)."""
    return import_dir / AREAS / ANONYMOUS.digest


def count(database: Path, table: str) -> tuple[int, int]:
    with sqlite3.connect(database) as connection:
        ((rows, keys),) = connection.execute(f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {table}")
    return rows, keys


async def test_a_csv_import_commits_every_good_row_and_reports_the_bad_ones(
    mcp: McpClient, import_dir: Path
) -> None:
    bad = 'x,too,many,fields\n,no key,here\n"a"b,c,d\n'  # the last: text after a closing quote
    source = csv_file(import_dir, 2500, extra=bad)
    arguments = {
        "source": source,
        "database": "people.db",
        "table": "people_a",
        "key": "id",
        "chunk_size": 1000,
        "chunk_delay_ms": 300,
    }
    task_id = await mcp.create_task("import_records", arguments)
    progress = await mcp.wait_for(task_id, lambda t: "rows (" in t.get("statusMessage", ""))
    # (and, while a chunk runs, for how long: Temporal's record of the activity)
    assert re.fullmatch(r"[\d,]+ / 2,503 rows \(\d+%\)( for \d+ s)?", progress["statusMessage"])
    done = await mcp.wait_terminal(task_id, within=30)
    result = done["result"]["structuredContent"]
    assert result["imported"] == 2500 and result["badRows"] == 3 and result["totalRows"] == 2503
    assert result["firstBadRows"] == [
        {"row": 2501, "line": 2502, "error": "has 4 fields, the header has 3"},
        {"row": 2502, "line": 2503, "error": "has no value for the key column 'id'"},
        {"row": 2503, "line": 2504, "error": "is not valid CSV: ',' expected after '\"'"},
    ]
    assert done["result"]["isError"] is False
    assert count(area(import_dir) / "people.db", "people_a") == (2500, 2500)


async def test_importing_again_updates_rows_instead_of_duplicating_them(
    mcp: McpClient, import_dir: Path
) -> None:
    source = import_dir / f"events-{uuid.uuid4().hex[:8]}.jsonl"
    source.write_text("\n".join(json.dumps({"id": i, "v": "old"}) for i in range(50)) + "\n")
    arguments = {"source": source.name, "database": "events.db", "table": "events", "key": "id"}
    await mcp.wait_terminal(await mcp.create_task("import_records", arguments))
    source.write_text(
        "\n".join(json.dumps({"id": i, "v": "new", "extra": [i]}) for i in range(50)) + "\n"
    )
    done = await mcp.wait_terminal(await mcp.create_task("import_records", arguments))
    assert done["result"]["structuredContent"]["imported"] == 50
    with sqlite3.connect(area(import_dir) / "events.db") as connection:
        rows = connection.execute("SELECT COUNT(*), MIN(v), MAX(extra) FROM events").fetchone()
    assert rows == (50, "new", "[9]")


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"source": "missing.csv"}, "does not exist"),
        ({"source": "../outside.csv"}, "outside the import directory"),
        ({"database": "../../etc/x.db"}, "outside the import directory"),
        ({"key": "nope"}, "is not among the columns"),
    ],
)
async def test_bad_paths_and_keys_are_clear_tool_errors(
    mcp: McpClient, import_dir: Path, arguments: dict[str, str], problem: str
) -> None:
    base = {"source": csv_file(import_dir, 3), "database": "x.db", "table": "t", "key": "id"}
    done = await mcp.wait_terminal(await mcp.create_task("import_records", {**base, **arguments}))
    assert done["result"]["isError"] is True and problem in done["result"]["content"][0]["text"]


async def test_cancel_stops_between_chunks_and_says_how_many_rows_were_committed(
    mcp: McpClient, import_dir: Path
) -> None:
    arguments = {
        "source": csv_file(import_dir, 2000),
        "database": "cancel.db",
        "table": "people",
        "key": "id",
        "chunk_size": 100,
        "chunk_delay_ms": 400,
    }
    task_id = await mcp.create_task("import_records", arguments)
    await mcp.wait_for(task_id, lambda t: t.get("statusMessage", "").startswith("200 /"))
    await mcp.cancel_task(task_id)
    cancelled = await mcp.wait_terminal(task_id)
    assert cancelled["status"] == "cancelled"
    committed = int(cancelled["statusMessage"].split()[1].replace(",", ""))
    assert cancelled["statusMessage"] == f"Cancelled: {committed:,} of 2,000 rows were committed"
    assert 200 <= committed < 2000
    assert count(area(import_dir) / "cancel.db", "people") == (committed, committed)


@pytest.mark.slow
@pytest.mark.timeout(180)  # 25-55 s measured alone: too close to the default 90 s under load
async def test_a_worker_killed_mid_import_loses_and_duplicates_nothing(
    fresh_stack: StackFactory, import_dir: Path, temporal: TemporalDevServer
) -> None:
    arguments = {
        "source": csv_file(import_dir, 3000),
        "database": "crash.db",
        "table": "people",
        "key": "id",
        "chunk_size": 100,
        "chunk_delay_ms": 150,
    }
    # No quota: its reservation needs a worker, and the worker process below may take longer
    # than the reservation waits (10 s) to start polling on a loaded host.
    async with fresh_stack(max_open_tasks_per_principal=0) as stack:
        await stack.stop_worker()
        worker = WorkerProcess(
            temporal.address, stack.settings.task_queue, import_dir=str(import_dir)
        )
        try:
            task_id = await stack.mcp.create_task("import_records", arguments)
            await stack.mcp.wait_for(
                task_id, lambda t: t.get("statusMessage", "").startswith("1,0"), within=30
            )
        finally:
            worker.kill()
        partial = count(area(import_dir) / "crash.db", "people")[0]
        assert 0 < partial < 3000
        await stack.start_worker()
        # A chunk the kill interrupted is retried once its heartbeats stop (30 s), on a host
        # that may be loaded.
        done = await stack.mcp.wait_terminal(task_id, within=120)
        assert done["result"]["structuredContent"]["imported"] == 3000
        assert count(area(import_dir) / "crash.db", "people") == (3000, 3000)


# ----- deterministic refusals, malformed CSV -------------------------------------------------


async def activity_attempts(client: Client, task_id: str) -> list[tuple[str, int]]:
    """(activity type, attempt) of every activity the task ran, from its history."""
    history = await client.get_workflow_handle(task_id).fetch_history()
    scheduled: dict[int, str] = {}
    attempts: list[tuple[str, int]] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            attempts.append((scheduled[started.scheduled_event_id], started.attempt))
    return attempts


PEOPLE = "id,name\n1,a\n2,b\n"
# name: (source text, table, what the database holds first, the reason given; DB: its name)
REFUSALS: dict[str, tuple[str, str, str | bytes | None, str]] = {
    "duplicate header": (
        "id,name,name\n1,a,b\n",
        "people",
        None,
        "the column 'name' comes twice (columns 2 and 3)",
    ),
    "header names differing in case": (
        "id,Name,name\n1,a,b\n",
        "people",
        None,
        "the columns 'Name' and 'name' (columns 2 and 3) are one column to SQLite",
    ),
    "JSON keys differing in case": (
        '{"id": 1, "a": 1}\n{"id": 2, "A": 2}\n',
        "people",
        None,
        "the columns 'a' and 'A' (columns 2 and 3) are one column to SQLite",
    ),
    "reserved table name": (
        PEOPLE,
        "sqlite_people",
        None,
        "the table name 'sqlite_people' is reserved",
    ),
    "table keyed differently": (
        PEOPLE,
        "people",
        "CREATE TABLE people (code PRIMARY KEY, id, name);",
        "the table 'people' in 'DB' already exists, keyed on (code), not on 'id'",
    ),
    "a view of that name": (
        PEOPLE,
        "people",
        "CREATE VIEW people AS SELECT 1 AS id;",
        "'people' is a view in the database 'DB', not a table",
    ),
    "not a SQLite file": (
        PEOPLE,
        "people",
        b"just some text, not a database\n" * 20,
        "the database 'DB' cannot be read as SQLite: file is not a database",
    ),
    "unterminated quote": (
        'id,name\n1,a\n2,"b\n3,c\n4,d\n',
        "people",
        None,
        "line 3: a quoted field opens here and is never closed (it runs to the end of the "
        "file, swallowing lines 4-5)",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
async def test_an_import_that_cannot_succeed_is_a_tool_error_at_once_writing_nothing(
    stack: Stack, import_dir: Path, case: str
) -> None:
    text, table, before, reason = REFUSALS[case]
    suffix = ".jsonl" if text.startswith("{") else ".csv"
    source = import_dir / f"refused-{uuid.uuid4().hex[:8]}{suffix}"
    source.write_text(text)
    folder = area(import_dir) / uuid.uuid4().hex[:8]
    folder.mkdir(parents=True)
    database = folder / "db.db"
    if isinstance(before, bytes):
        database.write_bytes(before)
    elif before:
        with sqlite3.connect(database) as connection:
            connection.executescript(before)
    kept = database.read_bytes() if before else None
    arguments = {
        "source": source.name,
        "database": f"{folder.name}/db.db",
        "table": table,
        "key": "id",
    }
    task_id = await stack.mcp.create_task("import_records", arguments)
    done = await stack.mcp.wait_terminal(task_id, within=30)
    assert done["status"] == "completed" and done["result"]["isError"] is True, done
    text_said = done["result"]["content"][0]["text"]
    assert text_said.startswith(f"Cannot import {source.name!r}: ")
    assert reason.replace("DB", arguments["database"]) in text_said
    # Refused by the plan, once: never retried, no chunk ran, nothing written.
    assert await activity_attempts(stack.client, task_id) == [("mcp_tasks.plan_import", 1)]
    assert (database.read_bytes() if before else None) == kept
    assert database.exists() == bool(before)


async def test_a_quote_closed_lines_later_is_a_bad_row_naming_the_lines_it_swallowed(
    mcp: McpClient, import_dir: Path
) -> None:
    source = import_dir / f"quote-{uuid.uuid4().hex[:8]}.csv"
    source.write_text('id,name,city\n1,a,b\n2,"open,x\n3,c,d\n4,e"f,g\n5,h,i\n')
    arguments = {"source": source.name, "database": "quote.db", "table": "people", "key": "id"}
    done = await mcp.wait_terminal(await mcp.create_task("import_records", arguments), within=30)
    result = done["result"]["structuredContent"]
    assert (result["imported"], result["badRows"], result["totalRows"]) == (2, 1, 3)
    assert result["firstBadRows"] == [
        {
            "row": 2,
            "line": 3,
            "error": "is not valid CSV: ',' expected after '\"' (the row runs over lines 3-5)",
        },
    ]
    with sqlite3.connect(area(import_dir) / "quote.db") as connection:
        assert connection.execute("SELECT id FROM people ORDER BY id").fetchall() == [
            ("1",),
            ("5",),
        ]


async def test_a_json_number_sqlite_cannot_hold_is_a_bad_row_not_a_failed_import(
    mcp: McpClient, import_dir: Path
) -> None:
    source = import_dir / f"big-{uuid.uuid4().hex[:8]}.jsonl"
    source.write_text('{"id": 1, "n": 5}\n\n{"id": 2, "n": 99999999999999999999}\n{"id": 3}\n')
    arguments = {"source": source.name, "database": "big.db", "table": "numbers", "key": "id"}
    done = await mcp.wait_terminal(await mcp.create_task("import_records", arguments), within=30)
    assert done["status"] == "completed", done
    result = done["result"]["structuredContent"]
    assert (result["imported"], result["badRows"], result["totalRows"]) == (2, 1, 3)
    assert result["firstBadRows"] == [
        {"row": 2, "line": 3, "error": "has a number in 'n' beyond SQLite's 64-bit integers"}
    ]


async def test_a_source_that_shrinks_during_the_import_is_said_to_have_ended_early(
    mcp: McpClient, import_dir: Path
) -> None:
    source = csv_file(import_dir, 300)
    arguments = {
        "source": source,
        "database": "shrunk.db",
        "table": "people",
        "key": "id",
        "chunk_size": 100,
        "chunk_delay_ms": 1500,
    }
    task_id = await mcp.create_task("import_records", arguments)
    await mcp.wait_for(task_id, lambda t: t.get("statusMessage", "").startswith("100 /"))
    lines = (import_dir / source).read_text().splitlines(keepends=True)
    (import_dir / source).write_text("".join(lines[:151]))  # the header and 150 rows
    done = await mcp.wait_terminal(task_id, within=30)
    assert done["result"]["content"][0]["text"] == (
        "Imported 150 of 300 rows into people; the source ended after row 150, shorter than "
        "when planned"
    )


async def test_a_chunk_refused_midway_ends_the_task_saying_what_was_committed(
    stack: Stack, import_dir: Path
) -> None:
    arguments = {
        "source": csv_file(import_dir, 300),
        "database": "rekeyed.db",
        "table": "people",
        "key": "id",
        "chunk_size": 100,
        "chunk_delay_ms": 1500,
    }
    task_id = await stack.mcp.create_task("import_records", arguments)
    await stack.mcp.wait_for(task_id, lambda t: t.get("statusMessage", "").startswith("100 /"))
    with sqlite3.connect(area(import_dir) / "rekeyed.db") as connection:
        connection.executescript(
            "DROP TABLE people; CREATE TABLE people (code PRIMARY KEY, id, name, city);"
        )
    done = await stack.mcp.wait_terminal(task_id, within=30)
    assert done["status"] == "completed" and done["result"]["isError"] is True, done
    said = done["result"]["content"][0]["text"]
    assert said.startswith(f"The import of {arguments['source']!r} stopped at row 101: ")
    assert "ON CONFLICT clause does not match" in said
    assert said.endswith("100 of 300 rows were committed")
    assert done["result"]["structuredContent"]["imported"] == 100
    attempts = await activity_attempts(stack.client, task_id)
    assert attempts[-1] == ("mcp_tasks.import_chunk", 1)  # deterministic: not retried


# ----- continue-as-new ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def short_runs(import_dir: Path, pipelines_dir: Path) -> ToolRegistry:
    """The demo tools, with imports that continue as new after every 2 chunks."""
    settings = Settings(
        import_dir=str(import_dir), pipelines_dir=str(pipelines_dir), import_chunks_per_run=2
    )
    return load_toolsets("demo", [], settings)


def csv_with_gaps(directory: Path, rows: int, every: int) -> str:
    """`rows` rows; each `every`-th has no key (a bad row)."""
    name = f"gaps-{uuid.uuid4().hex[:8]}.csv"
    lines = ["id,name"] + [f"{'' if i % every == 0 else i},n{i}" for i in range(1, rows + 1)]
    (directory / name).write_text("\n".join(lines) + "\n")
    return name


def rows_done(message: str) -> int:
    """12,000 from "12,000 / 50,000 rows (24%)"; -1 for any other statusMessage."""
    head = message.split(" / ", 1)[0].replace(",", "")
    return int(head) if " / " in message and head.isdigit() else -1


async def listed_once(legacy: Client2025, task_id: str) -> int:
    """How many times tasks/list (every page) lists `task_id`."""
    seen, cursor = 0, None
    for _ in range(100):
        reply = await legacy.request("tasks/list", {"cursor": cursor} if cursor else {})
        seen += [t["taskId"] for t in reply.result["tasks"]].count(task_id)
        cursor = reply.result.get("nextCursor")
        if not cursor:
            break
    return seen


async def test_a_long_import_continues_as_new_keeping_its_task_id_progress_and_totals(
    temporal_client: Client, short_runs: ToolRegistry, import_dir: Path
) -> None:
    source = csv_with_gaps(import_dir, 1000, every=150)  # rows 150, 300, ... 900: 6 bad
    arguments = {
        "source": source,
        "database": "runs.db",
        "table": "people",
        "key": "id",
        "chunk_size": 100,
        "chunk_delay_ms": 100,
    }
    async with running_stack(temporal_client, short_runs) as stack:
        task_id = await stack.mcp.create_task("import_records", arguments)
        got: list[str] = []

        async def poll() -> None:  # tasks/get all along, across every run
            while True:
                reply = await stack.mcp.get_task(task_id)
                if "result" in reply.body:  # (else rate-limited: poll again)
                    got.append(reply.result["statusMessage"])
                    if reply.result["status"] != "working":
                        return
                await asyncio.sleep(0.3)

        async with ListenStream(stack.mcp, {"taskIds": [task_id]}) as stream:
            polling = asyncio.create_task(poll())
            completed = await stream.next(task_status("completed"), within=60)
            await polling
        result = completed["params"]["result"]["structuredContent"]
        assert (result["imported"], result["badRows"], result["totalRows"]) == (994, 6, 1000)
        assert result["firstBadRows"] == [
            {"row": row, "line": row + 1, "error": "has no value for the key column 'id'"}
            for row in (150, 300, 450, 600, 750)
        ]
        # Once progress showed, every read showed progress (never back to "Queued"), and it
        # never went back at a run boundary.
        first = next(i for i, message in enumerate(got) if rows_done(message) >= 0)
        assert all(rows_done(m) >= 0 or m.startswith("Completed: ") for m in got[first:]), got
        counts = [rows_done(message) for message in got[first:] if rows_done(message) >= 0]
        assert counts == sorted(counts), got
        final = (await stack.mcp.get_task(task_id)).result
        assert final["result"]["structuredContent"] == result
        assert count(area(import_dir) / "runs.db", "people") == (994, 994)
        # Five runs of one workflow ID (2 chunks each); tasks/list shows one task.
        assert await runs_of(temporal_client, task_id, expected=5) == 5
        legacy = Client2025(stack.http, stack.url)
        await legacy.initialize()
        assert await listed_once(legacy, task_id) == 1


async def runs_of(client: Client, task_id: str, expected: int) -> int:
    """How many runs the workflow of `task_id` has (waiting, bounded, for the visibility store
    to count `expected`)."""
    deadline = time.monotonic() + 15
    while True:
        runs = (await client.count_workflows(f'WorkflowId="{task_id}"')).count
        if runs == expected or time.monotonic() > deadline:
            return runs
        await asyncio.sleep(0.2)


async def test_the_quota_slot_stays_held_across_continue_as_new_and_is_freed_at_the_end(
    temporal_client: Client, short_runs: ToolRegistry, import_dir: Path
) -> None:
    arguments = {
        "source": csv_file(import_dir, 600),
        "database": "slot.db",
        "table": "people",
        "key": "id",
        "chunk_size": 100,
        "chunk_delay_ms": 300,
    }
    async with running_stack(temporal_client, short_runs, max_open_tasks_per_principal=1) as stack:
        task_id = await stack.mcp.create_task("import_records", arguments)
        handle = temporal_client.get_workflow_handle(task_id)
        first, deadline = await first_run(handle), time.monotonic() + 30
        while (await handle.describe()).run_id == first:
            assert time.monotonic() < deadline, "the import never continued as new"
            await asyncio.sleep(0.1)
        # In its second run (or later), the slot is still the import's.
        refused = await stack.mcp.call_tool("import_records", arguments)
        assert refused.error["code"] == errors.QUOTA_EXCEEDED, refused.body
        done = await stack.mcp.wait_terminal(task_id, within=30)
        assert done["result"]["structuredContent"]["imported"] == 600
        again = await stack.mcp.create_task("import_records", arguments)  # the slot is free
        assert (await stack.mcp.wait_terminal(again, within=30))["status"] == "completed"


async def first_run(handle: WorkflowHandle[Any, Any]) -> str:
    return str((await handle.describe()).raw_description.workflow_execution_info.first_run_id)


# ----- replay, heartbeats --------------------------------------------------------------------

HISTORIES = Path(__file__).parent / "histories" / "imports"


@pytest.mark.parametrize("history", sorted(HISTORIES.glob("*.json")), ids=lambda path: path.stem)
async def test_recorded_imports_replay_on_todays_workflow(
    registry: ToolRegistry, history: Path
) -> None:
    """v1_*: recorded before heartbeats, refusals as tool errors and continue-as-new (they take
    the unpatched branch: finished, waiting on a timer, cancelled, a chunk that failed for
    good); v2_*: a run that continued as new, and the last run of that task."""
    # Only the import workflow's class (tests.workflows.test_task_state.replay): validating every
    # class of the registry in the sandbox cost seconds per history.
    assert (await replay(history, registry.workflows)).replay_failure is None


async def started_chunk(handle: WorkflowHandle[Any, Any], within: float) -> int:
    """Wait (bounded) until a worker has started an import chunk; its attempt."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for pending in (await handle.describe()).raw_description.pending_activities:
            started = pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
            if started and pending.activity_type.name == "mcp_tasks.import_chunk":
                return int(pending.attempt)
        await asyncio.sleep(0.05)
    raise AssertionError("no chunk was started")


@pytest.mark.slow
@pytest.mark.timeout(180)  # 25-55 s measured alone: too close to the default 90 s under load
async def test_a_worker_killed_inside_a_chunk_is_noticed_by_its_missing_heartbeats(
    fresh_stack: StackFactory, import_dir: Path, temporal: TemporalDevServer
) -> None:
    arguments = {
        "source": csv_file(import_dir, 300),
        "database": "beat.db",
        "table": "people",
        "key": "id",
        "chunk_size": 100,
        "chunk_delay_ms": 2000,
    }
    async with fresh_stack(max_open_tasks_per_principal=0) as stack:
        await stack.stop_worker()
        worker = WorkerProcess(
            temporal.address, stack.settings.task_queue, import_dir=str(import_dir)
        )
        try:
            task_id = await stack.mcp.create_task("import_records", arguments)
            await stack.mcp.wait_for(
                task_id, lambda t: t.get("statusMessage", "").startswith("100 /"), within=30
            )
            # Hold the database's write lock: the next chunk waits for it, inside the activity.
            lock = sqlite3.connect(area(import_dir) / "beat.db", isolation_level=None)
            lock.execute("BEGIN IMMEDIATE")
            handle = stack.client.get_workflow_handle(task_id)
            assert await started_chunk(handle, within=30) == 1
        finally:
            worker.kill()  # mid-chunk: the chunk's start_to_close timeout is 5 minutes
        lock.execute("ROLLBACK")
        lock.close()
        await stack.start_worker()
        # Within the heartbeat timeout (30 s) and a retry, not the 5 minutes.
        done = await stack.mcp.wait_terminal(task_id, within=90)
        assert done["result"]["structuredContent"]["imported"] == 300
        assert count(area(import_dir) / "beat.db", "people") == (300, 300)
        assert ("mcp_tasks.import_chunk", 2) in await activity_attempts(stack.client, task_id)
