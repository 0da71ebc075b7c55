"""What the import activities (activities/import_records.py) hand the import workflow
(workflows/import_records.py).

A TypedDict, not a dataclass: the activity's result is the JSON object recorded histories
hold, decoded as it is. It lives here, where the workflow sandbox imports it, so Temporal can
resolve its annotations when it decodes a result.
"""

from __future__ import annotations

from typing import Any, TypedDict


class ChunkDone(TypedDict):
    """What `import_chunk` committed, and where the next chunk starts."""

    imported: int
    badCount: int
    bad: list[dict[str, Any]]  # the first bad rows, each {"row", "line"?, "error"}
    rows: int  # rows read, good or bad
    nextOffset: int
    nextLine: int  # 0: not known (an import started before lines were counted)
