"""The payloads of docs/reference/interactive-contract.md as JSON Schemas, read from the page.

The page writes each payload as `{"v": 1, "statusMessage"?: string, "approvers"?: [string],
"inputRequests": {key: InputRequest}}`: a quoted name is a field (`?` when optional), `{key: X}`
a map of X, `[X]` a list of X, a number a constant. Read this way, a test checks what a sender
sends against the wire as the page states it, with no copy of the page to drift from it. The
page's schemas forbid fields it does not name: a sender of v1 sends nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

PAGE = Path(__file__).parent.parent / "docs" / "reference" / "interactive-contract.md"
SCHEMA_FILE = Path(__file__).parent.parent / "mcp_tasks" / "contracts" / "interactive.schema.json"

# A table row of the page: | `mcp.x` (/ `mcp.y`) | `payload` | ... |
ROW = re.compile(r"^\| (?P<names>`mcp\.[a-z]+`(?: / `mcp\.[a-z]+`)*) \| `(?P<payload>\{.*?\})` \|")
TOKEN = re.compile(
    r'\s*(?:(?P<punct>[{}\[\]:,?])|"(?P<string>[^"]*)"|(?P<number>\d+)|(?P<word>\w+))'
)
WORDS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    # The spec's types, as the contract carries them: {method, params} and a response object.
    "InputRequest": {"type": "object", "required": ["method", "params"]},
    "InputResponse": {"type": "object"},
}


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        while position < len(text.rstrip()):
            match = TOKEN.match(text, position)
            if match is None:
                raise ValueError(f"cannot read {text[position:]!r} in {text!r}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            position = match.end()
        self.at = 0

    def take(self, expected: str | None = None) -> tuple[str, str]:
        kind, value = self.tokens[self.at]
        if expected is not None and value != expected:
            raise ValueError(f"expected {expected!r}, found {value!r}")
        self.at += 1
        return kind, value

    def peek(self) -> str:
        return self.tokens[self.at][1]

    def value(self) -> dict[str, Any]:
        kind, value = self.take()
        if value == "{":
            return self.object()
        if value == "[":
            items = self.value()
            self.take("]")
            return {"type": "array", "items": items}
        if kind == "number":
            return {"const": int(value)}
        if kind == "word" and value in WORDS:
            return dict(WORDS[value])
        raise ValueError(f"unknown type {value!r}")

    def object(self) -> dict[str, Any]:
        if self.peek() == "key":  # {key: X}: a map
            self.take("key")
            self.take(":")
            values = self.value()
            self.take("}")
            return {"type": "object", "additionalProperties": values}
        properties: dict[str, Any] = {}
        required: list[str] = []
        while True:
            _, name = self.take()
            optional = self.peek() == "?"
            if optional:
                self.take("?")
            self.take(":")
            properties[name] = self.value()
            if not optional:
                required.append(name)
            if self.take()[1] == "}":
                break
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }


def payload_schema(text: str) -> dict[str, Any]:
    """The JSON Schema of one payload as the page writes it."""
    parser = _Parser(text)
    parser.take("{")
    schema = parser.object()
    if parser.at != len(parser.tokens):
        raise ValueError(f"trailing text in {text!r}")
    return schema


def page_schemas(page: Path = PAGE) -> dict[str, dict[str, Any]]:
    """Each signal's payload schema; a signal with several rows may carry any of them."""
    shapes: dict[str, list[dict[str, Any]]] = {}
    for line in page.read_text().splitlines():
        row = ROW.match(line)
        if row is None:
            continue
        schema = payload_schema(row["payload"])
        for name in re.findall(r"`(mcp\.[a-z]+)`", row["names"]):
            shapes.setdefault(name, []).append(schema)
    return {
        name: variants[0] if len(variants) == 1 else {"anyOf": variants}
        for name, variants in shapes.items()
    }
