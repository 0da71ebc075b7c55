"""Strict JSON for everything a client sends, and for what the server encodes again.

Rules implemented:
- `NaN`, `Infinity` and `-Infinity` are not JSON (RFC 8259): refused at parse time, and so is a
  number too large for a float (`1e999` would become infinity). Nothing non-finite ever reaches
  a schema check (where NaN passes every bound) or a workflow's input.
- Nesting is bounded: a value nested deeper than `MAX_DEPTH` arrays and objects is refused
  before anything else reads it (deeper ones made Temporal's encoder recurse until it failed).
- `dumps` never writes NaN or infinity: it raises instead, as JSON requires.
"""

from __future__ import annotations

import json
import math
from typing import Any

# Arrays and objects, counted from the message itself: a tools/call's arguments sit 3 deep.
MAX_DEPTH = 64


class NotStrictJson(ValueError):
    """Text that is not strict JSON; the message says what is wrong, in a few words."""


class TooDeep(ValueError):
    """A value nested deeper than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nested deeper than {limit} levels of arrays and objects (the limit)")
        self.limit = limit


def _no_constant(name: str) -> Any:
    raise NotStrictJson(f"{name} is not a JSON number (numbers must be finite)")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise NotStrictJson(f"number {text[:40]} is out of range")
    return number


def depth(value: Any) -> int:
    """How deeply arrays and objects nest in `value` (0 for a scalar), without recursion."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        pending.extend((child, level) for child in children)
    return deepest


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    if depth(value) > limit:
        raise TooDeep(limit)


def loads(text: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse strict JSON. Raises NotStrictJson (not JSON, or NaN/Infinity/an overflowing
    number), or TooDeep (nested deeper than `max_depth`)."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except NotStrictJson:
        raise
    except RecursionError:
        raise TooDeep(max_depth) from None
    except ValueError as exc:  # JSONDecodeError, bad UTF-8, an integer of too many digits
        raise NotStrictJson(str(exc)) from None
    check_depth(value, max_depth)
    return value


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps` that refuses NaN and infinity (ValueError) instead of writing them."""
    return json.dumps(value, allow_nan=False, **options)
