"""The workflow contract is typed end to end: no public function or method in `workflows/`
takes or returns a bare JSON object, `dict[str, Any]`, nor an alias of one. What crosses a
workflow's edge has a type of its own (mcp_tasks/contracts/: TypedDicts where the JSON must stay
byte for byte what histories and memos hold, dataclasses elsewhere).

A static check: each signature is found with `ast` and each annotation evaluated in its
module's namespace, so an alias (`JsonObject = dict[str, Any]`) is seen for what it is. And
the typed shapes are the same JSON as the bare objects they replaced, through Temporal's
converter and back.
"""

from __future__ import annotations

import ast
import importlib
import json
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.converter import DataConverter

from mcp_tasks.contracts.events import EventOutcome
from mcp_tasks.contracts.imports import ChunkDone
from mcp_tasks.contracts.task_state import Step
from mcp_tasks.contracts.webhooks import WebhookOutcome

ROOT = Path(__file__).parents[2]
WORKFLOWS = sorted((ROOT / "workflows").glob("*.py"))


def _is_bare_object(hint: object) -> bool:
    """Whether `hint` is, or holds anywhere inside, `dict[str, Any]`."""
    if typing.get_origin(hint) is dict and typing.get_args(hint) == (str, Any):
        return True
    return any(_is_bare_object(arg) for arg in typing.get_args(hint) if arg is not Ellipsis)


def _public_signatures(path: Path) -> Iterator[tuple[str, int, list[ast.expr]]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith(
            "_"
        ):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
            hints = [a.annotation for a in every if a.annotation is not None]
            if node.returns is not None:
                hints.append(node.returns)
            yield node.name, node.lineno, hints


def _offences(path: Path) -> list[str]:
    module = importlib.import_module(f"workflows.{path.stem}")
    namespace = {**vars(typing), **vars(module)}
    found = []
    for name, line, hints in _public_signatures(path):
        for annotation in hints:
            source = ast.unparse(annotation)
            try:
                hint = eval(source, namespace)
            except NameError:  # a name only the type checker imports: read the text
                bare = "dict[str, Any]" in source
            else:
                bare = _is_bare_object(hint)
            if bare:
                found.append(f"workflows/{path.name}:{line} {name}: {source}")
    return found


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.name)
def test_no_public_workflow_signature_takes_or_returns_a_bare_json_object(path: Path) -> None:
    assert _offences(path) == []


def test_the_check_sees_a_bare_object_behind_an_alias_and_inside_a_container() -> None:
    json_object = dict[str, Any]
    assert _is_bare_object(json_object)
    assert _is_bare_object(list[json_object])
    assert _is_bare_object(typing.Callable[[int], json_object | None])
    assert not _is_bare_object(dict[str, str])
    assert not _is_bare_object(typing.Mapping[str, object])


@pytest.mark.parametrize(
    ("hint", "value"),
    [
        (EventOutcome, {"outcome": "delivered", "status": 200}),
        (EventOutcome, {"outcome": "failed", "reason": "http_5xx"}),
        (WebhookOutcome, {"status": 204, "attempt": 3}),
        (
            ChunkDone,
            {
                "imported": 2,
                "badCount": 1,
                "bad": [{"row": 3, "error": "x"}],
                "rows": 3,
                "nextOffset": 40,
                "nextLine": 5,
            },
        ),
        (Step, {"name": "build", "status": "succeeded", "startedAt": "t", "exitCode": 0}),
    ],
)
def test_a_typed_shape_is_the_same_json_on_the_wire_and_back(hint: Any, value: Any) -> None:
    converter = DataConverter.default.payload_converter
    (payload,) = converter.to_payloads([value])
    assert payload.data == json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
    assert converter.from_payloads([payload], [hint]) == [value]
