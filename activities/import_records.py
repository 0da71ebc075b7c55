"""Batch import of CSV or JSON Lines files into SQLite, one idempotent chunk at a time.

- Sources are shared and read-only: any file of the import directory outside its `principals/`
  subdirectory (the server never writes there). Databases are the caller's own: they live in
  `principals/<owner digest>/` of the import directory, and a database path that resolves
  anywhere else (another caller's area, `..`, a symlink out) is refused. So one principal can
  neither read nor overwrite another's databases.
- Errors name paths as the caller gave them, never where the import directory is.
- Table and key names are whole-string identifiers (`fullmatch`: no trailing newline).
- The activities are plain `def`s: their file and SQLite I/O blocks, so they run on the
  worker's activity thread pool (runtime/worker.py), never on the event loop that every other
  activity and the worker's own heartbeats share. They heartbeat at most once a second while
  they read or write, so a worker that dies mid-chunk is noticed within the heartbeat timeout.
- `plan_import` reads the file once, before anything is written: its columns, its number of
  rows, and every deterministic reason it cannot be imported (import_records_tables.py; a CSV quote
  that never closes, import_records_rows.py). Those are `ImportRefused`, non-retryable.
- `import_chunk` reads `chunk_size` rows from a byte offset and upserts them on the key column
  in a single transaction: a chunk that is retried (its worker died) writes the same rows
  again, so nothing is duplicated or lost. It returns where the next chunk starts.
- Bad rows (no key, wrong width, invalid CSV or JSON, a number SQLite cannot hold) are counted
  and the first few reported with their row and line; they never stop the import.
- `inspect_source` is the planning activity of imports started before `plan_import` existed
  (workflows/import_records.py); it also lists every chunk's offset.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from activities.import_records_rows import Row, UnterminatedQuote, read_header, read_rows
from activities.import_records_tables import column_problem, is_transient, table_problem, upsert
from mcp_tasks.contracts.imports import ChunkDone

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
# The subdirectory holding each principal's own databases, and what an area may be named.
AREAS = "principals"
OWNER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
BAD_ROWS_REPORTED = 5
IMPORT_REFUSED = "ImportRefused"
HEARTBEAT_EVERY_S = 1.0
_INT64 = range(-(2**63), 2**63)


@dataclass
class ImportSpec:
    source: str
    database: str
    table: str
    key: str
    format: str
    chunk_size: int
    # The digest of the principal that owns the task: its databases are in its own area.
    owner: str = ""


def refused(message: str) -> ApplicationError:
    """A refusal the caller caused (a path outside its area, a bad identifier): one INFO line
    when raised in an activity, and the error marked BENIGN, so the SDK logs its own line at
    DEBUG instead of a traceback at WARNING (and counts no activity failure)."""
    if activity.in_activity():
        activity.logger.info("import refused: %s", message)
    return ApplicationError(
        message, type=IMPORT_REFUSED, non_retryable=True, category=ApplicationErrorCategory.BENIGN
    )


def _resolved(base: Path, relative: str, what: str) -> Path:
    try:
        return (base / relative).resolve()
    except (OSError, ValueError):  # a NUL byte, a symlink loop
        raise refused(f"the {what} {relative!r} is not a usable path") from None


def _checked(spec: ImportSpec) -> None:
    for what, name in (("table", spec.table), ("key", spec.key)):
        if not IDENTIFIER.fullmatch(name):
            raise refused(f"the {what} {name!r} is not an identifier ({IDENTIFIER.pattern})")


class _Pulse:
    """Heartbeats at most once every HEARTBEAT_EVERY_S, however often it is called."""

    def __init__(self) -> None:
        self.due = time.monotonic()
        self.live = activity.in_activity()  # False when called directly (tests)

    def __call__(self) -> None:
        now = time.monotonic()
        if self.live and now >= self.due:
            self.due = now + HEARTBEAT_EVERY_S
            activity.heartbeat()


class RecordImports:
    def __init__(self, directory: str) -> None:
        self.directory = Path(directory).resolve()
        self.areas = self.directory / AREAS

    def source(self, relative: str) -> Path:
        """A shared source: inside the import directory, outside every principal's area."""
        resolved = _resolved(self.directory, relative, "source")
        if not resolved.is_relative_to(self.directory):
            raise refused(f"the source {relative!r} is outside the import directory")
        if resolved.is_relative_to(self.areas):
            raise refused(
                f"the source {relative!r} is in {AREAS}/, where callers' databases are; "
                "sources are the import directory's other files"
            )
        return resolved

    def database(self, spec: ImportSpec) -> Path:
        """The database in the owner's own area (made on first use, private to the server)."""
        if not OWNER_NAME.fullmatch(spec.owner):
            raise refused("the task names no owner, so it has no databases to write")
        area = (self.areas / spec.owner).resolve()
        resolved = _resolved(area, spec.database, "database")
        if not resolved.is_relative_to(area) or resolved == area:
            raise refused(
                f"the database {spec.database!r} is outside the import directory "
                "(each caller writes only in its own area)"
            )
        return resolved

    @activity.defn(name="mcp_tasks.plan_import")
    def plan_import(self, spec: ImportSpec) -> dict[str, Any]:
        """The columns, the number of rows, and where the first row starts (its byte offset
        and line); ImportRefused if the import cannot succeed."""
        return self._plan(spec, with_offsets=False)

    @activity.defn(name="mcp_tasks.inspect_source")
    def inspect_source(self, spec: ImportSpec) -> dict[str, Any]:
        """The plan of imports started before plan_import: also every chunk's byte offset."""
        return self._plan(spec, with_offsets=True)

    def _plan(self, spec: ImportSpec, with_offsets: bool) -> dict[str, Any]:
        _checked(spec)
        source = self.source(spec.source)
        database = self.database(spec)
        area = (self.areas / spec.owner).resolve()
        for folder in database.parents[: len(database.relative_to(area).parts) - 1]:
            if folder.exists() and not folder.is_dir():
                shown = folder.relative_to(area).as_posix()
                raise refused(f"the database {spec.database!r} cannot be made: {shown!r} is a file")
        problem = table_problem(database, spec.database, spec.table, spec.key)
        if problem:
            raise refused(problem)
        if not source.is_file():
            raise refused(f"the source {spec.source!r} does not exist in the import directory")
        try:
            plan = self._scan(source, spec, with_offsets)
        except OSError as err:
            raise refused(f"the source {spec.source!r} cannot be read: {err.strerror}") from None
        except UnterminatedQuote as err:
            raise refused(str(err)) from None
        columns = plan["columns"]
        if spec.key not in columns:
            raise refused(f"the key column {spec.key!r} is not among the columns {columns}")
        problem = column_problem(columns)
        if problem:
            raise refused(f"the source's columns cannot be a table: {problem}")
        return plan

    def _scan(self, source: Path, spec: ImportSpec, with_offsets: bool) -> dict[str, Any]:
        offsets: list[int] = []
        columns: list[str] = []
        rows = 0
        beat = _Pulse()
        with source.open("rb") as handle:
            first_line = 1
            if spec.format == "csv":
                columns, first_line = read_header(handle)
            start = first = handle.tell()
            seen: dict[str, None] = {}
            for row in read_rows(handle, spec.format, first_line):
                if with_offsets and rows % spec.chunk_size == 0:
                    offsets.append(start)
                rows += 1
                start = row.end
                beat()
                if spec.format == "jsonl":
                    try:
                        record = json.loads(row.text)
                    except ValueError:
                        continue
                    if isinstance(record, dict):
                        seen.update(dict.fromkeys(map(str, record)))
            if spec.format == "jsonl":
                columns = list(seen)
        plan: dict[str, Any] = {"columns": columns, "totalRows": rows}
        if with_offsets:
            plan["chunkOffsets"] = offsets
        else:
            plan.update(offset=first, line=first_line)
        return plan

    @activity.defn(name="mcp_tasks.import_chunk")
    def import_chunk(
        self, spec: ImportSpec, columns: list[str], offset: int, first_row: int, first_line: int = 0
    ) -> ChunkDone:
        """Up to chunk_size rows from byte `offset` (row `first_row`, at line `first_line`; 0:
        not known, from an import started before lines were counted), upserted at once."""
        _checked(spec)
        try:
            return self._import_chunk(spec, columns, offset, first_row, first_line)
        except OSError as err:  # its own text would name the absolute path
            raise refused(
                f"the source {spec.source!r} or the database {spec.database!r} cannot be "
                f"used: {err.strerror}"
            ) from None
        except UnterminatedQuote as err:  # the file changed since it was planned
            raise refused(str(err)) from None
        except sqlite3.Error as err:  # no path in SQLite's messages
            raise ApplicationError(
                f"the database {spec.database!r} cannot be written: {err}",
                type="DatabaseError" if is_transient(err) else IMPORT_REFUSED,
                non_retryable=not is_transient(err),
            ) from None

    def _import_chunk(
        self, spec: ImportSpec, columns: list[str], offset: int, first_row: int, first_line: int
    ) -> ChunkDone:
        good: list[list[Any]] = []
        bad: list[dict[str, Any]] = []
        bad_count = read = 0
        beat = _Pulse()
        end, next_line = offset, first_line
        with self.source(spec.source).open("rb") as handle:
            handle.seek(offset)
            for row in read_rows(handle, spec.format, max(first_line, 1)):
                if read == spec.chunk_size:
                    break
                read += 1
                end, next_line = row.end, row.last_line + 1
                beat()
                values, problem = _values(row, columns, spec)
                if problem is None:
                    good.append(values)
                    continue
                bad_count += 1
                if len(bad) < BAD_ROWS_REPORTED:
                    bad.append(_bad_row(first_row + read - 1, row, problem, first_line > 0))
        with _uninterrupted():  # a transaction is never cut short
            upsert(self.database(spec), spec.table, spec.key, columns, good, beat)
        return {
            "imported": len(good),
            "badCount": bad_count,
            "bad": bad,
            "rows": read,
            "nextOffset": end,
            "nextLine": next_line if first_line else 0,
        }


def _uninterrupted() -> AbstractContextManager[None]:
    """Holds back the worker's cancellation of this thread until the block ends."""
    return activity.shield_thread_cancel_exception() if activity.in_activity() else nullcontext()


def _bad_row(number: int, row: Row, problem: str, lines_known: bool) -> dict[str, Any]:
    if not lines_known:
        return {"row": number, "error": problem}
    if row.last_line != row.line:
        problem += f" (the row runs over {row.where()})"
    return {"row": number, "line": row.line, "error": problem}


def _values(row: Row, columns: list[str], spec: ImportSpec) -> tuple[list[Any], str | None]:
    if row.problem is not None:
        return [], row.problem
    if spec.format == "csv":
        fields = row.fields or []
        if not fields:
            return [], "is blank"
        if len(fields) != len(columns):
            return [], f"has {len(fields)} fields, the header has {len(columns)}"
        record: Any = dict(zip(columns, fields, strict=True))
    else:
        try:
            record = json.loads(row.text)
        except ValueError as err:  # JSONDecodeError, or an integer beyond the digit limit
            return [], f"is not valid JSON: {getattr(err, 'msg', err)}"
        if not isinstance(record, dict):
            return [], "is not a JSON object"
    if record.get(spec.key) in (None, ""):
        return [], f"has no value for the key column {spec.key!r}"
    values = [record.get(column) for column in columns]
    for column, value in zip(columns, values, strict=True):
        if isinstance(value, int) and value not in _INT64:
            return [], f"has a number in {column!r} beyond SQLite's 64-bit integers"
    return [json.dumps(v) if isinstance(v, dict | list) else v for v in values], None
