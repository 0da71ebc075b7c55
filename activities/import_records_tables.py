"""The SQLite side of an import: what is checked before any row is written, and the upsert.

Rules implemented:
- Checked before the first chunk, so a doomed import fails at once, as a tool error, with
  nothing written: a table name SQLite reserves (`sqlite_*`), column names SQLite would take
  for one (it compares them case-insensitively), more columns than SQLite allows, a database
  file that is not SQLite, a name that is a view or index there, or an existing table keyed
  on anything but the import's key column. The database is only read here (never created).
- A chunk's rows are upserted on the key column in one transaction: a chunk that runs twice
  (its worker died) writes the same rows again. Columns the table lacks are added.
- SQLite errors that can pass (busy, locked, I/O, disk full) are retried; any other is a
  deterministic refusal (`is_transient` tells them apart).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

# SQLite's default SQLITE_MAX_COLUMN.
MAX_COLUMNS = 2000
# How long a write waits for another writer's lock before it fails (and is retried): well
# under the chunk activity's heartbeat timeout, since nothing heartbeats while it waits.
BUSY_TIMEOUT_S = 10
_TRANSIENT = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_PROTOCOL")
_ROWS_PER_STATEMENT = 2000


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def is_transient(err: sqlite3.Error) -> bool:
    """Whether a retry may succeed: a lock, I/O or a full disk, not the statement itself."""
    name = getattr(err, "sqlite_errorname", "") or ""
    return name.startswith(_TRANSIENT)


def column_problem(columns: list[str]) -> str | None:
    """Why SQLite cannot hold these columns in one table, or None."""
    seen: dict[str, int] = {}
    for number, name in enumerate(columns, 1):
        if not name:
            return f"column {number} has no name"
        first = seen.setdefault(name.lower(), number)
        if first == number:
            continue
        if columns[first - 1] == name:
            return f"the column {name!r} comes twice (columns {first} and {number})"
        return (
            f"the columns {columns[first - 1]!r} and {name!r} (columns {first} and {number}) "
            "are one column to SQLite, which compares names case-insensitively"
        )
    if len(columns) > MAX_COLUMNS:
        return f"there are {len(columns):,} columns; a SQLite table holds at most {MAX_COLUMNS:,}"
    return None


def table_problem(database: Path, shown: str, table: str, key: str) -> str | None:
    """Why `table` of the database at `database` (named `shown` to the caller) cannot take
    rows keyed on `key`, or None. Reads only; a missing database is fine."""
    if table.lower().startswith("sqlite_"):
        return f"the table name {table!r} is reserved by SQLite (names starting with sqlite_)"
    if not database.exists():
        return None
    if not database.is_file():
        return f"the database {shown!r} is not a file"
    try:
        connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            found = connection.execute(
                "SELECT type, name FROM sqlite_master WHERE name = ? COLLATE NOCASE", (table,)
            ).fetchone()
            if found is None:
                return None
            kind, name = found
            if kind != "table":
                return f"{name!r} is a {kind} in the database {shown!r}, not a table"
            info = connection.execute(f"PRAGMA table_info({quoted(name)})").fetchall()
        finally:
            connection.close()
    except sqlite3.DatabaseError as err:
        if isinstance(err, sqlite3.OperationalError) and is_transient(err):
            return None  # locked right now: the chunk will wait for it, or retry
        return f"the database {shown!r} cannot be read as SQLite: {err}"
    keys = [row[1] for row in sorted(info, key=lambda row: row[5]) if row[5]]
    if [k.lower() for k in keys] != [key.lower()]:
        keyed = f"on ({', '.join(keys)})" if keys else "on no column"
        return (
            f"the table {name!r} in {shown!r} already exists, keyed {keyed}, not on {key!r}; "
            "import with its key, or into another table"
        )
    return None


def upsert(
    database: Path,
    table: str,
    key: str,
    columns: list[str],
    rows: list[list[Any]],
    beat: Callable[[], None],
) -> None:
    """Create or widen the table and upsert `rows` on `key`, in one transaction."""
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    connection = sqlite3.connect(database, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("BEGIN IMMEDIATE")
        name = quoted(table)
        others = [quoted(c) for c in columns if c != key]
        definition = ", ".join([f"{quoted(key)} PRIMARY KEY", *others])
        connection.execute(f"CREATE TABLE IF NOT EXISTS {name} ({definition})")
        existing = {r[1].lower() for r in connection.execute(f"PRAGMA table_info({name})")}
        for column in columns:
            if column.lower() not in existing:
                connection.execute(f"ALTER TABLE {name} ADD COLUMN {quoted(column)}")
        names = ", ".join(quoted(c) for c in columns)
        marks = ", ".join("?" for _ in columns)
        updates = (
            ", ".join(f"{c} = excluded.{c}" for c in others)
            or f"{quoted(key)} = excluded.{quoted(key)}"
        )
        statement = (
            f"INSERT INTO {name} ({names}) VALUES ({marks}) "
            f"ON CONFLICT({quoted(key)}) DO UPDATE SET {updates}"
        )
        for start in range(0, len(rows), _ROWS_PER_STATEMENT):
            connection.executemany(statement, rows[start : start + _ROWS_PER_STATEMENT])
            beat()
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    finally:
        connection.close()
