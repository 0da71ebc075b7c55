"""The Python helper (sdk/python, distribution `mcp-tasks-workflow`, import `mcp_tasks_workflow`)
speaks the contract as mcp_tasks/contracts/interactive.py defines it, and installs into a team's
worker with `temporalio` alone: nothing of this server, no top-level `workflows`/`activities`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mcp_tasks_workflow as helper
import pytest
from jsonschema import Draft202012Validator

from mcp_tasks.contracts import interactive
from workflows.child_questions import invalid_input_request

SDK = Path(__file__).resolve().parents[2] / "sdk" / "python"
INSTALL_TIMEOUT_S = 300

SCHEMA_FILE = (
    Path(__file__).resolve().parents[2] / "mcp_tasks" / "contracts" / "interactive.schema.json"
)


def test_the_helper_uses_the_contracts_names() -> None:
    assert {
        helper.REPORT_SIGNAL,
        helper.ASK_SIGNAL,
        helper.PAUSED_SIGNAL,
        helper.ANSWER_SIGNAL,
        helper.STEER_SIGNAL,
        helper.PAUSE_SIGNAL,
        helper.RESUME_SIGNAL,
    } == set(interactive.SIGNALS)
    assert helper.TOOL_ERROR_TYPE == interactive.TOOL_ERROR_TYPE
    assert helper.VERSION == interactive.CONTRACT_VERSION


def test_what_the_helper_builds_is_what_the_task_accepts() -> None:
    request = helper.elicitation("Switch?", {"approve": {"type": "boolean"}}, ["approve"])
    assert invalid_input_request(request) is None
    schema = json.loads(SCHEMA_FILE.read_text())
    ask = {"v": 1, "questionId": "q1", "inputRequests": {"approve": request}}
    assert Draft202012Validator({**schema, "$ref": schema["signals"]["mcp.ask"]}).is_valid(ask)
    assert interactive.is_call_tool_result(helper.tool_result("done", {"n": 1}))
    error = helper.ToolError("declined", {"switched": False})
    assert (error.type, error.non_retryable, error.details) == (
        "McpToolError",
        True,
        ({"switched": False},),
    )


def test_a_form_property_without_a_type_is_refused_as_it_is_built() -> None:
    with pytest.raises(ValueError, match="'env' needs a type"):
        helper.elicitation("Where?", {"env": {"enum": ["a", "b"]}})


@pytest.mark.slow
def test_installed_into_a_fresh_venv_it_brings_temporalio_and_nothing_of_the_server(
    tmp_path: Path,
) -> None:
    # A team's machine: no PYTHONPATH pointing into this repository.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(SDK)],
        check=True,
        timeout=INSTALL_TIMEOUT_S,
        cwd=tmp_path,
        env=env,
    )
    probe = (
        "import importlib.metadata as m, importlib.util as u, json\n"
        "dist = m.distribution('mcp-tasks-workflow')\n"
        "print(json.dumps({'requires': dist.requires,\n"
        "  'packages': sorted({f.parts[0] for f in dist.files if f.suffix == '.py'}),\n"
        "  'found': {n: u.find_spec(n) is not None for n in\n"
        "    ['mcp_tasks_workflow', 'temporalio', 'mcp_server', 'mcp_tasks', 'workflows',\n"
        "     'activities', 'pydantic', 'fastapi']}}))\n"
    )
    done = subprocess.run(
        [python, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    found = json.loads(done.stdout)
    assert [req.split(">")[0] for req in found["requires"]] == ["temporalio"]
    assert found["packages"] == ["mcp_tasks_workflow"]
    assert found["found"] == {
        "mcp_tasks_workflow": True,
        "temporalio": True,
        "mcp_server": False,
        "mcp_tasks": False,
        "workflows": False,
        "activities": False,
        "pydantic": False,
        "fastapi": False,
    }
