"""Log formats, and the one line per request.

- `json` (the default of `mcp-tasks server` and `worker`): one JSON object per line with
  `time`, `level`, `logger`, then either the record's fields (a request line: `requestId`,
  `jsonrpcId`, `method`, `taskId`, `principal`, `outcome`, `status`, `durationMs`) or
  `message`. An audit line, already JSON, is merged as its fields. A traceback, for a server
  bug only, is one `exception` string, so one event stays one line.
- Joined: every line logged while an HTTP request is served carries its `requestId` (the
  `X-Request-Id` the client sent or the server made, returned in the response), so the request
  line and the audit line of one request share it; the JSON-RPC id is `jsonrpcId`. With tracing
  on, a line logged inside a span carries `trace_id` and `span_id` (hex, as OpenTelemetry
  writes them), and the request line those of its request span.
- The Temporal SDK's lines (workflow and activity loggers) carry their ids as fields, under
  `temporal` (`workflow_id`, `run_id`, `activity_type`, ...), plus `taskId` (the workflow id),
  instead of a dict appended to the message (`configure` turns that off in the json format).
- A `principal` field (request and audit lines) is logged as a keyed digest: the first 32 hex
  digits of HMAC-SHA256 under a key derived from the first key of MCP_TASKS_STATE_SECRET
  (`principal_tag`), of the digest Temporal stores (McpOwner). Without the secret, a dictionary
  of user names cannot be turned into the logged values; `mcp-tasks tasks principal NAME`
  prints a name's value to search the logs for (docs/operations/observability.md).
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

import hashlib
import hmac
import json
import logging
import re
import secrets
import sys
import time
from collections.abc import Sequence
from typing import Any, Literal

from mcp_tasks import tracer
from mcp_tasks.request_id import HTTP_REQUEST_ID

LogFormat = Literal["text", "json"]
REQUEST_LOGGER = "mcp_server.requests"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

HTTP_CLIENT_LOGGERS = ("httpx", "httpcore")
_URL = re.compile(r"(?P<origin>[A-Za-z][A-Za-z0-9+.-]*://[^/\s'\"<>?#]+)[^\s'\"<>]*")

log = logging.getLogger(REQUEST_LOGGER)
_TEMPORAL_EXTRAS = ("temporal_workflow", "temporal_activity")
_PRINCIPAL_LABEL = b"mcp-tasks log principal v1"
_principal_key = [secrets.token_bytes(32)]  # replaced by use_principal_key at start


def principal_key(state_secret_key: bytes) -> bytes:
    """The key of the logged principal digests, derived from a state secret key."""
    return hmac.new(state_secret_key, _PRINCIPAL_LABEL, hashlib.sha256).digest()


def use_principal_key(state_secret: Sequence[bytes]) -> None:
    """Key the logged principals with the first key of the state secret (at the start)."""
    _principal_key[0] = principal_key(state_secret[0])


def principal_tag(digest: str, key: bytes | None = None) -> str:
    """What a log line says of the principal whose McpOwner digest is `digest`."""
    mac = hmac.new(key or _principal_key[0], digest.encode("utf-8"), hashlib.sha256)
    return mac.hexdigest()[:32]


class KeyedPrincipals(logging.Filter):
    """Replaces the `principal` of a request line (its fields) or an audit line (its JSON) by
    its keyed digest, before any handler formats it, in either format."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict) and isinstance(fields.get("principal"), str):
            keyed = {**fields, "principal": principal_tag(fields["principal"])}
            record.__dict__["fields"], record.msg = keyed, _Text(keyed)
        elif isinstance(record.msg, str) and record.msg.startswith("{") and not record.args:
            entry = _object_or_message(record.msg)
            if isinstance(entry.get("principal"), str) and "message" not in entry:
                entry["principal"] = principal_tag(entry["principal"])
                record.msg = json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
        return True


_KEYED_PRINCIPALS = KeyedPrincipals()


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
        _join(entry, record)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=False, default=str)


def _join(entry: dict[str, Any], record: logging.LogRecord) -> None:
    """The ids that join a line to others: the request's, the Temporal SDK's, the trace's."""
    request_id = HTTP_REQUEST_ID.get()
    if request_id is not None:
        entry.setdefault("requestId", request_id)
    for name in _TEMPORAL_EXTRAS:
        temporal = getattr(record, name, None)
        if isinstance(temporal, dict):
            entry["temporal"] = temporal
            if isinstance(temporal.get("workflow_id"), str):
                entry.setdefault("taskId", temporal["workflow_id"])
    if "trace_id" not in entry and tracer.current() is not None:
        entry.update(current_trace_ids())


def current_trace_ids() -> dict[str, str]:
    """`trace_id` and `span_id` of the current span (hex), or {} outside of one."""
    if tracer.current() is None:
        return {}
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}


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
    handler.addFilter(_KEYED_PRINCIPALS)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    quiet_http_clients()
    _temporal_ids_as_fields(log_format == "json")


def _temporal_ids_as_fields(on: bool) -> None:
    """The SDK's workflow and activity loggers append their ids to the message unless told not
    to; in the json format the formatter writes them as fields (`temporal`) instead."""
    from temporalio import activity, workflow

    workflow.logger.workflow_info_on_message = not on
    activity.logger.activity_info_on_message = not on


# The reads whose successful request lines may be sampled (MCP_TASKS_LOG_READS_EVERY): a
# client polls them, so they are most of the log's volume, and each one changes nothing.
SAMPLED_READS = frozenset({"tasks/get", "tasks/list", "tasks/result"})
_reads = {"every": 1, "seen": 0}


def sample_reads(every: int) -> None:
    """Log one successful read in `every` (1: all); the others are counted in the metrics only.
    Errors, and every other method, are always logged."""
    _reads["every"], _reads["seen"] = max(1, every), 0


def request_line(fields: dict[str, Any]) -> None:
    """One request, served or refused: INFO, or WARNING for an error of the server (5xx)."""
    status = fields.get("status", 0)
    level = logging.WARNING if isinstance(status, int) and status >= 500 else logging.INFO
    if not log.isEnabledFor(level):
        return
    every = _reads["every"]
    if every > 1 and fields.get("outcome") == "ok" and fields.get("method") in SAMPLED_READS:
        _reads["seen"] += 1
        if _reads["seen"] % every != 1:
            return
        fields = {**fields, "sampledOneIn": every}
    log.log(level, _Text(fields), extra={"fields": fields})


class _Text:
    """The text form of a request line, built only by a text formatter that asks for it."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __str__(self) -> str:
        return " ".join(f"{key}={value}" for key, value in self.fields.items() if value is not None)
