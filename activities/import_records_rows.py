"""The rows of an import source, read from any byte offset, each with the lines it spans.

Rules implemented:
- A source is read as bytes, one line at a time, so every row knows the byte offset where it
  ends (the next chunk starts there) and the file lines it spans (1-based; a CSV header is
  line 1). Text is UTF-8; bytes that are not become U+FFFD; a UTF-8 byte order mark before the
  header is dropped.
- CSV is parsed strictly: a row the parser refuses (text after a closing quote, a field over
  the csv module's size limit) is a bad row with its lines, and parsing goes on after it. A
  quoted field that is still open at the end of the file is `UnterminatedQuote`, naming the
  line where it opened: it would otherwise swallow every later line into one field.
- A quoted field may legitimately span lines; a bad row says which lines it ran over.
- JSON Lines: one row per line; blank lines are no rows.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass

# What CPython's csv module says when a quoted field is still open at the end of the input.
_END_OF_DATA = "unexpected end of data"


class UnterminatedQuote(Exception):
    def __init__(self, line: int, last_line: int) -> None:
        later = f", swallowing lines {line + 1}-{last_line}" if last_line > line else ""
        super().__init__(
            f"line {line}: a quoted field opens here and is never closed (it runs to the end "
            f"of the file{later})"
        )
        self.line = line


@dataclass
class Row:
    """One row: CSV fields or a JSON Lines text, or why the CSV parser refused it."""

    line: int  # the file line where it starts
    last_line: int  # the file line where it ends
    end: int  # the byte offset just past it
    fields: list[str] | None = None
    text: str = ""
    problem: str | None = None

    def where(self) -> str:
        if self.last_line == self.line:
            return f"line {self.line}"
        return f"lines {self.line}-{self.last_line}"


def read_header(handle: io.BufferedReader) -> tuple[list[str], int]:
    """The CSV header's column names (stripped) and the line after it."""
    line = handle.readline()
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    header = next(csv.reader([line.decode("utf-8", errors="replace")]), [])
    return [name.strip() for name in header], 2


def read_rows(handle: io.BufferedReader, fmt: str, first_line: int) -> Iterator[Row]:
    """The rows from the handle's position, which is the start of line `first_line`."""
    position = handle.tell()
    consumed = 0

    def lines() -> Iterator[str]:
        nonlocal position, consumed
        for raw in handle:
            position += len(raw)
            consumed += 1
            yield raw.decode("utf-8", errors="replace")

    if fmt != "csv":
        for text in lines():
            if text.strip():
                line = first_line + consumed - 1
                yield Row(line, line, position, text=text)
        return
    reader = csv.reader(lines(), strict=True)
    while True:
        start = first_line + consumed
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            last = first_line + consumed - 1
            if str(err) == _END_OF_DATA:
                raise UnterminatedQuote(start, last) from None
            yield Row(start, last, position, problem=_explained(str(err)))
            continue
        yield Row(start, first_line + consumed - 1, position, fields=fields)


def _explained(message: str) -> str:
    if message.startswith("field larger than field limit"):
        return f"has a field over {csv.field_size_limit():,} characters (an unclosed quote?)"
    return f"is not valid CSV: {message}"
