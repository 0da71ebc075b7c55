"""Names and shapes of the MCP 2026-07-28 wire that several modules share."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

PROTOCOL_VERSION = "2026-07-28"
# Versions a request may name in `_meta` (the stateless era).
SUPPORTED_VERSIONS = (PROTOCOL_VERSION,)
# Versions the `initialize` handshake negotiates (the session era), newest first.
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
# The two eras a request belongs to, named as their folders are (v2026/, v2025/): the stateless
# revision, and the `initialize` handshake (2025-11-25 and the handshake versions before it).
Era = Literal["2026-07-28", "2025-11-25"]
V2026: Era = "2026-07-28"
V2025: Era = "2025-11-25"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
# A task's sequence number on each `notifications/tasks` (tasks/sequence.py). Neither the core
# schema nor the ext-tasks draft names one, and every `io.modelcontextprotocol/` key is
# reserved for MCP itself, so this server's own prefix (a label of its package name) carries it.
META_TASK_SEQUENCE = "mcp-tasks-temporal/sequence"
# How far a task reported it is, `{"progress": n, "total"?: m}` (TaskState.progress), in the
# `_meta` of a 2026-07-28 tasks/get result and `notifications/tasks`, only when it reported
# numbers: DetailedTask has no field for them, and the same prefix keeps them this server's own.
META_TASK_PROGRESS = "mcp-tasks-temporal/progress"
# The ext-tasks draft's `RelatedTaskIds` (schema/draft/schema.ts at b30c477), on any request.
META_RELATED_TASK_IDS = "io.modelcontextprotocol/relatedTaskIds"


TASKS_CAPABILITY: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}


def iso_now(now: datetime | None = None) -> str:
    """An ISO 8601 UTC timestamp with millisecond precision, e.g. 2026-08-01T10:30:00.123Z."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
