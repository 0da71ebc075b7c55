"""Batch import of CSV or JSON Lines files into SQLite, one idempotent chunk at a time.

- Sources are shared and read-only: any file of the import directory outside its `principals/`
  subdirectory (the server never writes there). Databases are the caller's own: they live in
  `principals/<owner digest>/` of the import directory, and a database path that resolves
  anywhere else (another caller's area, `..`, a symlink out) is refused. So one principal can
  neither read nor overwrite another's databases.
- Errors name paths as the caller gave them, never where the import directory is.
- Table and key names are whole-string identifiers (`fullmatch`: no trailing newline).
- `inspect_source` reads the file once: the columns, the number of rows, and the byte offset
  at which every chunk starts, so each chunk can be re-read on its own after a crash.
- `import_chunk` upserts its rows on the key column in a single transaction: a chunk that is
  retried (its worker died) writes the same rows again, so nothing is duplicated or lost.
- Bad rows (no key, wrong width, not a JSON object) are counted and the first few reported;
  they never stop the import.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
# The subdirectory holding each principal's own databases, and what an area may be named.
AREAS = "principals"
OWNER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
BAD_ROWS_REPORTED = 5
IMPORT_REFUSED = "ImportRefused"


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
    return ApplicationError(message, type=IMPORT_REFUSED, non_retryable=True)


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _rows(handle: io.BufferedReader, fmt: str) -> Iterator[tuple[int, Any]]:
    """(byte offset where the row ends, row) for each row from the handle's position."""
    position = handle.tell()

    def lines() -> Iterator[str]:
        nonlocal position
        for raw in handle:
            position += len(raw)
            yield raw.decode("utf-8", errors="replace")

    if fmt == "csv":
        for row in csv.reader(lines()):
            yield position, row
    else:
        for line in lines():
            if line.strip():
                yield position, line


def _resolved(base: Path, relative: str, what: str) -> Path:
    try:
        return (base / relative).resolve()
    except (OSError, ValueError):  # a NUL byte, a symlink loop
        raise refused(f"the {what} {relative!r} is not a usable path") from None


def _checked(spec: ImportSpec) -> None:
    for what, name in (("table", spec.table), ("key", spec.key)):
        if not IDENTIFIER.fullmatch(name):
            raise refused(f"the {what} {name!r} is not an identifier ({IDENTIFIER.pattern})")


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

    @activity.defn(name="mcp_tasks.inspect_source")
    async def inspect_source(self, spec: ImportSpec) -> dict[str, Any]:
        _checked(spec)
        source = self.source(spec.source)
        self.database(spec)
        if not source.is_file():
            raise refused(f"the source {spec.source!r} does not exist in the import directory")
        try:
            return self._inspect(source, spec)
        except OSError as err:
            raise refused(f"the source {spec.source!r} cannot be read: {err.strerror}") from None

    def _inspect(self, source: Path, spec: ImportSpec) -> dict[str, Any]:
        offsets: list[int] = []
        columns: list[str] = []
        rows = 0
        with source.open("rb") as handle:
            start = 0
            if spec.format == "csv":
                header = next(csv.reader([handle.readline().decode("utf-8", errors="replace")]), [])
                columns = [name.strip() for name in header]
                start = handle.tell()
            seen: dict[str, None] = {}
            for end, row in _rows(handle, spec.format):
                if rows % spec.chunk_size == 0:
                    offsets.append(start)
                rows += 1
                start = end
                if spec.format == "jsonl":
                    try:
                        record = json.loads(row)
                    except ValueError:
                        continue
                    if isinstance(record, dict):
                        seen.update(dict.fromkeys(map(str, record)))
            if spec.format == "jsonl":
                columns = list(seen)
        if spec.key not in columns:
            raise refused(f"the key column {spec.key!r} is not among the columns {columns}")
        bad = [c for c in columns if not c]
        if bad:
            raise refused("the source has a column without a name")
        return {"columns": columns, "totalRows": rows, "chunkOffsets": offsets}

    @activity.defn(name="mcp_tasks.import_chunk")
    async def import_chunk(
        self, spec: ImportSpec, columns: list[str], offset: int, first_row: int
    ) -> dict[str, Any]:
        _checked(spec)
        try:
            return self._import_chunk(spec, columns, offset, first_row)
        except OSError as err:  # its own text would name the absolute path
            raise refused(
                f"the source {spec.source!r} or the database {spec.database!r} cannot be "
                f"used: {err.strerror}"
            ) from None
        except sqlite3.Error as err:  # no path in SQLite's messages; "locked" may pass
            raise ApplicationError(
                f"the database {spec.database!r} cannot be written: {err}",
                type="DatabaseError",
            ) from None

    def _import_chunk(
        self, spec: ImportSpec, columns: list[str], offset: int, first_row: int
    ) -> dict[str, Any]:
        good: list[list[Any]] = []
        bad: list[dict[str, Any]] = []
        bad_count = 0
        with self.source(spec.source).open("rb") as handle:
            handle.seek(offset)
            for number, (_, row) in enumerate(_rows(handle, spec.format), first_row):
                if number >= first_row + spec.chunk_size:
                    break
                values, problem = _values(row, columns, spec)
                if problem:
                    bad_count += 1
                    if len(bad) < BAD_ROWS_REPORTED:
                        bad.append({"row": number, "error": problem})
                else:
                    good.append(values)
        _upsert(self.database(spec), spec, columns, good)
        return {"imported": len(good), "badCount": bad_count, "bad": bad}


def _values(row: Any, columns: list[str], spec: ImportSpec) -> tuple[list[Any], str | None]:
    if spec.format == "csv":
        if len(row) != len(columns):
            return [], f"has {len(row)} fields, the header has {len(columns)}"
        record = dict(zip(columns, row, strict=True))
    else:
        try:
            record = json.loads(row)
        except ValueError as err:  # JSONDecodeError, or an integer beyond the digit limit
            return [], f"is not valid JSON: {getattr(err, 'msg', err)}"
        if not isinstance(record, dict):
            return [], "is not a JSON object"
    if record.get(spec.key) in (None, ""):
        return [], f"has no value for the key column {spec.key!r}"
    values = [record.get(column) for column in columns]
    return [json.dumps(v) if isinstance(v, dict | list) else v for v in values], None


def _upsert(database: Path, spec: ImportSpec, columns: list[str], rows: list[list[Any]]) -> None:
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    connection = sqlite3.connect(database, timeout=30, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("BEGIN IMMEDIATE")
        table = quoted(spec.table)
        others = [quoted(c) for c in columns if c != spec.key]
        definition = ", ".join([f"{quoted(spec.key)} PRIMARY KEY", *others])
        connection.execute(f"CREATE TABLE IF NOT EXISTS {table} ({definition})")
        existing = {r[1] for r in connection.execute(f"PRAGMA table_info({table})")}
        for column in columns:
            if column not in existing:
                connection.execute(f"ALTER TABLE {table} ADD COLUMN {quoted(column)}")
        names = ", ".join(quoted(c) for c in columns)
        marks = ", ".join("?" for _ in columns)
        updates = (
            ", ".join(f"{c} = excluded.{c}" for c in others)
            or f"{quoted(spec.key)} = excluded.{quoted(spec.key)}"
        )
        connection.executemany(
            f"INSERT INTO {table} ({names}) VALUES ({marks}) "
            f"ON CONFLICT({quoted(spec.key)}) DO UPDATE SET {updates}",
            rows,
        )
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    finally:
        connection.close()
