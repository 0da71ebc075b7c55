"""Security, second pass: names checked as whole strings, no server paths in client-facing errors,
each principal's own import area, and request ids bounded in the audit log."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.deploy import PipelineFiles, parse_pipeline
from activities.import_records import AREAS, ImportSpec, RecordImports
from mcp_server.protocol.frame import errors
from mcp_server.runtime.tokens import add_token
from mcp_server.tools.patterns import ecma_to_python
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.identity import ANONYMOUS, Principal
from tests.asgi_stack import AsgiStack
from tests.conftest import Stack, StackFactory
from tests.mcp_client import TASKS, McpClient


def text_of(task: dict[str, object]) -> str:
    """Everything a client reads of a finished task: its result, error and statusMessage."""
    return repr(task)


# ----- patterns: `$` is the end of the string -----------------------------------------------


def test_a_json_schema_dollar_is_the_end_of_the_string_as_in_ecma_262() -> None:
    assert ecma_to_python(r"^[a-z$]+\$x$") == r"^[a-z$]+\$x\Z"
    assert ecma_to_python(r"^(a|b$)$") == r"^(a|b\Z)\Z"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("import_records", {"source": "s.csv", "database": "d.db", "table": "t\n", "key": "id"}),
        ("import_records", {"source": "s.csv", "database": "d.db", "table": "t", "key": "id\n"}),
        ("deploy", {"pipeline": "release\n"}),
    ],
)
def test_tool_arguments_with_a_trailing_newline_do_not_match_an_anchored_pattern(
    registry: ToolRegistry, tool: str, arguments: dict[str, str]
) -> None:
    errors = registry.argument_errors(tool, arguments)
    assert errors and "does not match" in errors[0]
    assert registry.get(tool) is not None
    published = str(registry.get(tool).input_schema)  # type: ignore[union-attr]
    assert r"\Z" not in published  # the published schema stays ECMA-262


async def test_a_pipeline_name_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    (tmp_path / "release\n.toml").write_text("[[steps]]\nname = 'a'\nrun = 'true'\n")
    with pytest.raises(ApplicationError, match="is not a pipeline name"):
        await PipelineFiles(str(tmp_path)).load_pipeline("release\n")


@pytest.mark.parametrize("names", [{"table": "people\n"}, {"key": "id\n"}])
async def test_a_table_or_key_with_a_trailing_newline_is_refused(
    tmp_path: Path, names: dict[str, str]
) -> None:
    (tmp_path / "people.csv").write_text("id,name\n1,a\n")
    spec = ImportSpec(
        **{"source": "people.csv", "database": "p.db", "table": "people", "key": "id", **names},
        format="csv",
        chunk_size=10,
        owner=ANONYMOUS.digest,
    )
    with pytest.raises(ApplicationError, match="is not an identifier"):
        RecordImports(str(tmp_path)).plan_import(spec)


# ----- no server paths in client-facing errors ------------------------------------------------


async def test_an_unknown_pipeline_does_not_say_where_pipelines_are(tmp_path: Path) -> None:
    with pytest.raises(ApplicationError) as caught:
        await PipelineFiles(str(tmp_path)).load_pipeline("nope")
    assert "no pipeline named 'nope'" in caught.value.message
    assert str(tmp_path) not in caught.value.message


def test_an_unreadable_pipeline_file_is_named_without_its_directory(tmp_path: Path) -> None:
    (tmp_path / "odd.toml").mkdir()  # reading it fails with an OSError naming the full path
    with pytest.raises(ApplicationError) as caught:
        parse_pipeline(tmp_path / "odd.toml")
    assert caught.value.message.startswith("odd.toml: cannot be read")
    assert str(tmp_path) not in caught.value.message


async def test_a_step_whose_cwd_is_missing_fails_without_showing_the_server_path(
    mcp: McpClient, pipelines_dir: Path
) -> None:
    name = f"nowhere-{uuid.uuid4().hex[:8]}"
    (pipelines_dir / f"{name}.toml").write_text(
        "[[steps]]\nname = 'a'\nrun = 'true'\ncwd = 'no-such-dir'\n"
    )
    task = await mcp.wait_terminal(await mcp.create_task("deploy", {"pipeline": name}), 30)
    # A step that cannot start is a failed step (rolled back like any other): a tool error.
    assert task["status"] == "completed" and task["result"]["isError"] is True, task
    assert "no-such-dir" in text_of(task)
    assert str(pipelines_dir.parent) not in text_of(task)


async def test_an_import_that_cannot_write_its_database_does_not_show_the_server_path(
    mcp: McpClient, import_dir: Path
) -> None:
    source = f"few-{uuid.uuid4().hex[:8]}.csv"
    (import_dir / source).write_text("id,name\n1,a\n")
    first = {"source": source, "database": f"{source}.db", "table": "t", "key": "id"}
    assert (await mcp.wait_terminal(await mcp.create_task("import_records", first)))[
        "status"
    ] == "completed"
    # A database "inside" that database file: making its directory fails with an OSError.
    nested = {**first, "database": f"{source}.db/inner.db"}
    task = await mcp.wait_terminal(await mcp.create_task("import_records", nested), 40)
    assert task["status"] == "completed" and task["result"]["isError"] is True, task
    assert f"cannot be made: '{source}.db' is a file" in task["statusMessage"]
    assert str(import_dir.parent) not in text_of(task)


# ----- each principal's own import area ----------------------------------------------------


@pytest.fixture
async def two_callers(
    fresh_stack: StackFactory, tmp_path: Path
) -> AsyncIterator[tuple[Stack, McpClient, McpClient]]:
    tokens = tmp_path / "tokens.json"
    alice, bob = add_token(tokens, "alice", []), add_token(tokens, "bob", [])
    async with fresh_stack(auth="tokens", tokens_file=str(tokens)) as stack:
        yield stack, as_client(stack, alice), as_client(stack, bob)


def as_client(stack: Stack, token: str) -> McpClient:
    client = McpClient(stack.http, stack.url)
    client.extra_headers = {"Authorization": f"Bearer {token}"}
    return client


def rows(database: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(database) as connection:
        return list(connection.execute("SELECT id, name FROM people ORDER BY id"))


async def test_a_principal_cannot_read_or_overwrite_another_ones_database(
    two_callers: tuple[Stack, McpClient, McpClient], import_dir: Path
) -> None:
    _, alice, bob = two_callers
    tag = uuid.uuid4().hex[:8]
    (import_dir / f"alice-{tag}.csv").write_text("id,name\n1,alice\n")
    (import_dir / f"bob-{tag}.csv").write_text("id,name\n1,bob\n2,bob\n")
    database = f"crm-{tag}.db"
    for caller, who in ((alice, "alice"), (bob, "bob")):
        arguments = {
            "source": f"{who}-{tag}.csv",
            "database": database,
            "table": "people",
            "key": "id",
        }
        task = await caller.wait_terminal(await caller.create_task("import_records", arguments))
        assert task["status"] == "completed", task
    areas = import_dir / AREAS
    alice_area, bob_area = areas / Principal("alice").digest, areas / Principal("bob").digest
    assert rows(alice_area / database) == [("1", "alice")]
    assert rows(bob_area / database) == [("1", "bob"), ("2", "bob")]
    assert not (import_dir / database).exists()

    attempts = {
        # Bob writes into Alice's area, by `..` or by an absolute path.
        "database": [f"../{alice_area.name}/{database}", str(alice_area / database)],
        # Bob reads Alice's database as a source.
        "source": [f"{AREAS}/{alice_area.name}/{database}", f"../{import_dir.name}/{AREAS}"],
    }
    for argument, values in attempts.items():
        for value in values:
            arguments = {
                "source": f"bob-{tag}.csv",
                "database": "x.db",
                "table": "people",
                "key": "id",
                argument: value,
            }
            task = await bob.wait_terminal(await bob.create_task("import_records", arguments))
            message = task["result"]["content"][0]["text"]
            assert task["result"]["isError"] and repr(value) in message, message
    assert rows(alice_area / database) == [("1", "alice")]


# ----- request ids: bounded in the audit log, absurd ones refused ------------------------------


async def post_with_id(stack: AsgiStack, request_id: str, method: str, task_id: str) -> Any:
    params = {
        "taskId": task_id,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": TASKS,
            "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
        },
    }
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    headers = stack.mcp.headers_for(method, params)
    return await stack.http.post(stack.url, json=body, headers=headers)


async def test_an_absurd_request_id_is_an_invalid_request(asgi_stack: AsgiStack) -> None:
    response = await post_with_id(asgi_stack, "i" * 257, "tasks/cancel", "mcp-task-" + "0" * 32)
    assert response.json()["error"]["code"] == errors.INVALID_REQUEST
    assert "longer than 256" in response.json()["error"]["message"]
    assert response.json().get("id") is None  # not echoed: it was not accepted


async def test_long_request_ids_and_task_ids_are_logged_truncated_and_marked(
    asgi_stack: AsgiStack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_server.protocol.audit")
    # The taskId also travels in the Mcp-Name header: kept well under h11's 16 KiB head limit.
    request_id, task_id = "r" * 256, "t" * 5000
    response = await post_with_id(asgi_stack, request_id, "tasks/cancel", task_id)
    assert response.json()["id"] == request_id  # the client still gets its own id back
    (line,) = [
        json.loads(r.getMessage()) for r in caplog.records if r.name == "mcp_server.protocol.audit"
    ]
    assert line["outcome"] == f"error {errors.INVALID_PARAMS}"
    assert len(caplog.text) < 2000
    assert line["jsonrpcId"] == "r" * 64 + "…" and line["jsonrpcIdTruncated"] is True
    assert line["jsonrpcIdSha256"] == hashlib.sha256(request_id.encode()).hexdigest()
    assert line["taskId"] == "t" * 64 + "…" and line["taskIdTruncated"] is True
