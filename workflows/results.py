"""Builders for tool results (`ToolResult`, mcp_tasks/contracts/tool_messages.py), used by
synchronous tools and task workflows alike."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp_tasks.contracts.tool_messages import ToolResult

# Temporal rejects any payload above 2 MiB (and gRPC messages above 4 MiB). A task result is a
# workflow result, so it must fit with room for the payload's own metadata.
MAX_RESULT_BYTES = 2_000_000


def text_result(
    text: str, *, structured: Mapping[str, object] | None = None, is_error: bool = False
) -> ToolResult:
    """A result of one text block, with `structuredContent` (a JSON object of any shape) when
    given."""
    content = None if structured is None else dict(structured)
    return ToolResult([{"type": "text", "text": text}], content, is_error)


def encoded_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def bounded(result: ToolResult) -> ToolResult:
    """The result itself, or a tool error naming its size when it cannot be stored by Temporal."""
    size = encoded_size(result.wire())
    if size <= MAX_RESULT_BYTES:
        return result
    return text_result(
        f"The tool produced a result of {size:,} bytes, above the {MAX_RESULT_BYTES:,}-byte "
        "limit of a task result (Temporal's payload cap). Store large outputs elsewhere "
        "and return a reference to them.",
        is_error=True,
    )
