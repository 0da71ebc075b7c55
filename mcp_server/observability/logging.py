"""Log formats, and the one line per request.

- `json` (the default of `mcp-tasks server` and `worker`): one JSON object per line with
  `time`, `level`, `logger`, then either the record's fields (a request line: `requestId`,
  `method`, `taskId`, `principal` digest, `outcome`, `status`, `durationMs`) or `message`. An
  audit line, already JSON, is merged as its fields. A traceback, for a server bug only, is
  one `exception` string, so one event stays one line.
- `text` (the default of `mcp-tasks dev` and `stdio`): `time LEVEL logger: message` for a
  human at a terminal.
A client's mistake (-32602, a refused token) is one request line with its outcome, never a
traceback: tracebacks are logged only for errors the server did not expect.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Literal

LogFormat = Literal["text", "json"]
REQUEST_LOGGER = "mcp_server.requests"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

log = logging.getLogger(REQUEST_LOGGER)


class JsonFormatter(logging.Formatter):
    converter = time.gmtime  # type: ignore[assignment]

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)  # a request line: its text form is never built
        else:
            message = record.getMessage()
            if message.startswith("{"):
                entry.update(_object_or_message(message))
            else:
                entry["message"] = message
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=False, default=str)


def _object_or_message(message: str) -> dict[str, Any]:
    try:
        parsed = json.loads(message)
    except ValueError:
        return {"message": message}
    return parsed if isinstance(parsed, dict) else {"message": message}


def configure(log_format: LogFormat, level: str = "INFO") -> None:
    """Every logger of the process (ours, uvicorn's, the Temporal SDK's) to stderr in one
    format; replaces what was configured before."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


def request_line(fields: dict[str, Any]) -> None:
    """One request, served or refused: INFO, or WARNING for an error of the server (5xx)."""
    status = fields.get("status", 0)
    level = logging.WARNING if isinstance(status, int) and status >= 500 else logging.INFO
    if not log.isEnabledFor(level):
        return
    log.log(level, _Text(fields), extra={"fields": fields})


class _Text:
    """The text form of a request line, built only by a text formatter that asks for it."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __str__(self) -> str:
        return " ".join(f"{key}={value}" for key, value in self.fields.items() if value is not None)
