"""Builders for CallToolResult dicts, used by synchronous tools and task workflows alike."""

from __future__ import annotations

import json
from typing import Any

# Temporal rejects any payload above 2 MiB (and gRPC messages above 4 MiB). A task result is a
# workflow result, so it must fit with room for the payload's own metadata.
MAX_RESULT_BYTES = 2_000_000


def text_result(
    text: str, *, structured: dict[str, Any] | None = None, is_error: bool = False
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "resultType": "complete",
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
    }
    if structured is not None:
        result["structuredContent"] = structured
    return result


def encoded_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def bounded(result: dict[str, Any]) -> dict[str, Any]:
    """The result itself, or a tool error naming its size when it cannot be stored by Temporal."""
    size = encoded_size(result)
    if size <= MAX_RESULT_BYTES:
        return result
    return text_result(
        f"The tool produced a result of {size:,} bytes, above the {MAX_RESULT_BYTES:,}-byte "
        "limit of a task result (Temporal's payload cap). Store large outputs elsewhere "
        "and return a reference to them.",
        is_error=True,
    )
