"""Secret argument values, and the one rule that keeps them out of what a task publishes.

Pure and deterministic: used inside the workflow sandbox (memo, results, failures) and by the
worker's interceptors (exception messages before the SDK logs or records them).

The rule (docs/operations/security.md, "Secrets"):
- The secret values of a task are the values of its `secret_arguments`: a string, or the text
  of a number; in an object or array argument, every such value inside it. Empty strings and
  booleans are not secrets.
- A secret of 4 characters or more is replaced by `[redacted]` wherever it occurs, even inside
  a longer word.
- A shorter one (1 to 3 characters) would mangle ordinary text if replaced everywhere: it is
  replaced where it stands as a whole token (not next to a letter, digit or underscore), which
  includes a JSON string or number that is exactly the secret. Inside a longer word it stays:
  `x7` is redacted in "key x7 used" and `{"key": "x7"}`, not in "abcx7def".
- JSON is redacted in its string values, its keys and its numbers (read as their text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
# Secrets this long or longer are replaced wherever they occur; shorter ones as whole tokens.
MIN_SUBSTRING_LENGTH = 4


def secret_values(arguments: Mapping[str, Any], names: Iterable[str]) -> list[str]:
    """The secret values of a task: see the module's rule."""
    found: set[str] = set()
    for name in names:
        if name in arguments:
            _collect(arguments[name], found)
    return sorted(found, key=lambda value: (-len(value), value))


def _collect(value: Any, found: set[str]) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, str | int | float):
        if text := str(value):
            found.add(text)
    elif isinstance(value, Mapping):
        for item in value.values():
            _collect(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, found)


class Redactor:
    """Replaces the secret values of one task by `[redacted]` in text and JSON values."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(sorted(set(secrets) - {""}, key=lambda s: (-len(s), s)))
        long = [re.escape(s) for s in self.secrets if len(s) >= MIN_SUBSTRING_LENGTH]
        short = [re.escape(s) for s in self.secrets if len(s) < MIN_SUBSTRING_LENGTH]
        parts = [*long]
        if short:
            parts.append(rf"(?<!\w)(?:{'|'.join(short)})(?!\w)")
        self._pattern = re.compile("|".join(parts)) if parts else None

    @classmethod
    def for_arguments(cls, arguments: Mapping[str, Any], names: Iterable[str]) -> Redactor:
        return cls(secret_values(arguments, names))

    def __bool__(self) -> bool:
        return self._pattern is not None

    def mentions(self, text: str) -> bool:
        """Whether `text` shows a secret (by the module's rule)."""
        return self._pattern is not None and self._pattern.search(text) is not None

    def text(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """A JSON-like value with every secret redacted (a copy; `value` is not changed)."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            return REDACTED if str(value) in self.secrets else value
        if isinstance(value, Mapping):
            return {self.value(key): self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value
