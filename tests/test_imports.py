"""`import_records`: CSV / JSON Lines into SQLite, chunked, idempotent, cancellable, crash-safe."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from activities.records import AREAS
from mcp_server.http.auth import ANONYMOUS
from mcp_server.runtime.devserver import TemporalDevServer
from tests.conftest import Stack
from tests.dev_process import WorkerProcess
from tests.mcp_client import McpClient

StackFactory = Callable[..., AbstractAsyncContextManager[Stack]]


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
    bad = 'x,too,many,fields\n,no key,here\n"unterminated,quote\n'
    source = csv_file(import_dir, 2500, extra=bad)
    arguments = {"source": source, "database": "people.db", "table": "people_a", "key": "id",
                 "chunk_size": 1000, "chunk_delay_ms": 300}  # fmt: skip
    task_id = await mcp.create_task("import_records", arguments)
    progress = await mcp.wait_for(task_id, lambda t: "rows (" in t.get("statusMessage", ""))
    assert progress["statusMessage"].endswith("%)")
    done = await mcp.wait_terminal(task_id, within=30)
    result = done["result"]["structuredContent"]
    assert result["imported"] == 2500 and result["badRows"] == 3 and result["totalRows"] == 2503
    assert [b["row"] for b in result["firstBadRows"]] == [2501, 2502, 2503]
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
    arguments = {"source": csv_file(import_dir, 2000), "database": "cancel.db", "table": "people",
                 "key": "id", "chunk_size": 100, "chunk_delay_ms": 400}  # fmt: skip
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
async def test_a_worker_killed_mid_import_loses_and_duplicates_nothing(
    fresh_stack: StackFactory, import_dir: Path, temporal: TemporalDevServer
) -> None:
    arguments = {"source": csv_file(import_dir, 3000), "database": "crash.db", "table": "people",
                 "key": "id", "chunk_size": 100, "chunk_delay_ms": 150}  # fmt: skip
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
        done = await stack.mcp.wait_terminal(task_id, within=60)
        assert done["result"]["structuredContent"]["imported"] == 3000
        assert count(area(import_dir) / "crash.db", "people") == (3000, 3000)
