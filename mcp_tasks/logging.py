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

No URL an HTTP client calls reaches a log: a webhook's URL is its secret (Slack's is the only
credential), so httpx's and httpcore's request lines (`HTTP Request: POST https://...` at
INFO) are silenced below WARNING in every process (`quiet_http_clients`, run by `configure`
and by the webhook activity's module), and what they log at WARNING or above has every URL
cut to its scheme and host.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any, Literal

LogFormat = Literal["text", "json"]
REQUEST_LOGGER = "mcp_server.requests"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

HTTP_CLIENT_LOGGERS = ("httpx", "httpcore")
_URL = re.compile(r"(?P<origin>[A-Za-z][A-Za-z0-9+.-]*://[^/\s'\"<>?#]+)[^\s'\"<>]*")

log = logging.getLogger(REQUEST_LOGGER)


def redact_urls(text: str) -> str:
    """Every URL in `text` cut to its scheme and host (and port): the path, query and fragment
    of a webhook URL are its secret."""
    return _URL.sub(r"\g<origin>", text)


class RedactUrls(logging.Filter):
    """Rewrites a record of an HTTP client's logger so no URL path reaches any handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".", 1)[0] in HTTP_CLIENT_LOGGERS:
            record.msg = redact_urls(record.getMessage())
            record.args = None
        return True


_REDACT_URLS = RedactUrls()


def quiet_http_clients() -> None:
    """httpx and httpcore log below WARNING no more, and what they still log is redacted.
    Idempotent; a logger set to a lower level by hand is put back to WARNING."""
    for name in HTTP_CLIENT_LOGGERS:
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() < logging.WARNING:
            logger.setLevel(logging.WARNING)
        if _REDACT_URLS not in logger.filters:
            logger.addFilter(_REDACT_URLS)


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
    handler.addFilter(_REDACT_URLS)  # also covers httpcore's child loggers
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    quiet_http_clients()


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
