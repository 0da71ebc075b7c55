"""Log lines join to each other and to traces .

In process (tests/asgi_stack.py): the request line and the audit line are written by the HTTP
middleware and the protocol layer of the app itself, which is what is checked here; no Temporal
is needed. The SDK's own lines are made with the SDK's logger adapters (ActivityEnvironment
runs a real activity context), and the expected refusal of a missing pipeline runs the
activity the deploy workflow runs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory
from temporalio.testing import ActivityEnvironment

from activities.deploy import PipelineFiles
from activities.import_records import refused
from mcp_server.observability import tracing
from mcp_server.runtime.operator_cli import add_parser, run
from mcp_server.tasks.listing import owner_digest
from mcp_tasks import logging as log_setup
from mcp_tasks.identity import ANONYMOUS
from mcp_tasks.logging import (
    REQUEST_LOGGER,
    JsonFormatter,
    KeyedPrincipals,
    principal_key,
    principal_tag,
)
from tests.asgi_stack import AsgiStackFactory

AUDIT_LOGGER = "mcp_server.protocol.audit"
SECRET = "state-secret-of-the-log-tests-" + "x" * 16


@contextlib.contextmanager
def lines_of(*names: str) -> Iterator[list[dict[str, object]]]:
    """Each record of the loggers `names`, formatted as the server's JSON handler formats it
    (its principal filter, then JsonFormatter), at the moment it is logged."""
    seen: list[dict[str, object]] = []
    formatter, keyed = JsonFormatter(), KeyedPrincipals()

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            keyed.filter(record)
            seen.append(json.loads(formatter.format(record)))

    handler = Keep()
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        yield seen
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


async def test_the_request_line_and_the_audit_line_of_one_request_share_its_request_id(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    async with fresh_asgi_stack(state_secret=SECRET) as stack:
        with lines_of(REQUEST_LOGGER, AUDIT_LOGGER) as seen:
            reply = await stack.mcp.call_tool(
                "multi_step_job",
                {"steps": 1, "step_seconds": 0},
                headers={"X-Request-Id": "req-from-the-proxy-1"},
            )
    assert reply.result["resultType"] == "task"
    audit = next(line for line in seen if line["logger"] == AUDIT_LOGGER)
    request = next(line for line in seen if line["logger"] == REQUEST_LOGGER)
    assert audit["requestId"] == request["requestId"] == "req-from-the-proxy-1"
    assert audit["jsonrpcId"] == request["jsonrpcId"] is not None
    assert audit["taskId"] == request["taskId"] == reply.result["taskId"]


async def test_the_principal_is_logged_as_a_digest_keyed_by_the_state_secret(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    async with fresh_asgi_stack(state_secret=SECRET) as stack:
        with lines_of(REQUEST_LOGGER, AUDIT_LOGGER) as seen:
            await stack.mcp.create_task("multi_step_job", {"steps": 1, "step_seconds": 0})
    logged = {str(line["principal"]) for line in seen}
    expected = principal_tag(ANONYMOUS.digest, principal_key(SECRET.encode()))
    assert logged == {expected}
    # A dictionary of names, hashed as Temporal's McpOwner is (or plainly), finds nothing.
    for name in ("anonymous", "alice", "root", "admin"):
        candidates = {owner_digest(name), hashlib.sha256(name.encode()).hexdigest()[:32]}
        assert expected not in candidates
    assert principal_tag(ANONYMOUS.digest, principal_key(b"another-secret-" + b"y" * 16)) != (
        expected
    )


async def test_the_request_line_and_the_lines_inside_its_span_carry_its_trace_ids(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    try:
        async with fresh_asgi_stack() as stack:
            with lines_of(REQUEST_LOGGER, AUDIT_LOGGER) as seen:
                await stack.mcp.call_tool(
                    "multi_step_job",
                    {"steps": 1, "step_seconds": 0},
                    headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"},
                )
    finally:
        tracing.use(None)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "MCP tools/call"]
    span_id = f"{span.context.span_id:016x}"
    assert {(line["logger"], line["trace_id"], line["span_id"]) for line in seen} == {
        (REQUEST_LOGGER, trace_id, span_id),
        (AUDIT_LOGGER, trace_id, span_id),
    }


def test_without_tracing_no_line_carries_trace_ids() -> None:
    record = logging.LogRecord("x", logging.INFO, "", 0, "hello", None, None)
    assert "trace_id" not in json.loads(JsonFormatter().format(record))


async def test_the_sdks_activity_lines_carry_their_ids_as_fields_not_in_the_message() -> None:
    log_setup._temporal_ids_as_fields(True)
    seen: list[dict[str, object]] = []
    try:
        with lines_of("temporalio.activity") as seen:
            await ActivityEnvironment().run(_logs_a_line)
    finally:
        log_setup._temporal_ids_as_fields(False)
    (line,) = seen
    assert line["message"] == "step done"  # nothing appended
    temporal = line["temporal"]
    assert isinstance(temporal, dict) and temporal["activity_type"] == "unknown"
    assert line["taskId"] == temporal["workflow_id"]


@activity.defn
async def _logs_a_line() -> None:
    activity.logger.info("step done")


async def test_a_missing_pipeline_is_one_info_line_and_a_benign_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="temporalio.activity")
    with pytest.raises(ApplicationError) as refused:
        await ActivityEnvironment().run(PipelineFiles(str(tmp_path)).load_pipeline, "nope")
    assert refused.value.category == ApplicationErrorCategory.BENIGN
    assert refused.value.non_retryable and "no pipeline named 'nope'" in refused.value.message
    ours = [r for r in caplog.records if r.name == "temporalio.activity"]
    assert [(r.levelno, r.exc_info) for r in ours] == [(logging.INFO, None)]
    assert "no pipeline named 'nope'" in ours[0].getMessage()


def test_the_operator_finds_a_names_logged_value_under_each_state_secret_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    new, old = "new-" + "n" * 20, "old-" + "o" * 20
    monkeypatch.setenv("MCP_TASKS_STATE_SECRET", f"{new},{old}")
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    # run() configures the process's logging, as the command does at its start: the root
    # handlers it installs (their principal filter keys every later record) go with the test.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        assert run(parser.parse_args(["tasks", "principal", "alice"])) == 0
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
    digest = owner_digest("alice")
    assert capsys.readouterr().out.split() == [
        "McpOwner",
        digest,
        "principal",
        principal_tag(digest, principal_key(new.encode())),
        "principal",
        principal_tag(digest, principal_key(old.encode())),
    ]


@activity.defn
async def _refuses_an_import() -> None:
    raise refused("the source 'x.csv' does not exist in the import directory")


async def test_a_refused_import_is_one_info_line_and_a_benign_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="temporalio.activity")
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(_refuses_an_import)
    assert caught.value.category == ApplicationErrorCategory.BENIGN
    ours = [r for r in caplog.records if r.name == "temporalio.activity"]
    assert [(r.levelno, r.exc_info) for r in ours] == [(logging.INFO, None)]
