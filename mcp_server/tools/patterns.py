"""JSON Schema `pattern` with the ECMA-262 meaning clients assume, and names checked whole.

- JSON Schema patterns are ECMA-262 regular expressions, where `$` (no multiline flag) matches
  only at the end of the string. Python's `$` also matches before a trailing newline, so with
  Python's `re` a published `^[a-z]+$` would let "abc\\n" through. Tool arguments are validated
  by `ArgumentValidator`, whose `pattern` reads every unescaped `$` outside a character class
  as `\\Z`; the published schema keeps its plain ECMA-262 `$`.
- Server-side checks of names (`full_name`) use `fullmatch`, never `match` with `^...$`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators


def ecma_to_python(pattern: str) -> str:
    """`pattern` with every end-of-input `$` written `\\Z` (what ECMA-262's `$` means)."""
    out: list[str] = []
    in_class = False
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            out.append(char + next(chars, ""))
        elif in_class:
            in_class = char != "]"
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        else:
            out.append(r"\Z" if char == "$" else char)
    return "".join(out)


@lru_cache(maxsize=512)
def compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(ecma_to_python(pattern))


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not compiled(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


ArgumentValidator = validators.extend(Draft202012Validator, {"pattern": _pattern})


def full_name(pattern: re.Pattern[str], value: object) -> bool:
    """Whether `value` is a string matched by `pattern` as a whole (no trailing newline)."""
    return isinstance(value, str) and pattern.fullmatch(value) is not None
