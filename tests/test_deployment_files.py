"""docker-compose.yml stays wired to the settings the code really reads."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_server.http.app import create_app
from mcp_server.protocol.services import state_secret
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings

COMPOSE = Path(__file__).resolve().parent.parent / "docker-compose.yml"
SETTINGS = {f"MCP_TASKS_{name.upper()}" for name in Settings.model_fields}


def services() -> dict[str, Any]:
    return dict(yaml.safe_load(COMPOSE.read_text())["services"])


def test_compose_runs_temporal_on_postgresql_with_its_ui_a_server_and_a_worker() -> None:
    assert {
        "postgresql",
        "temporal",
        "temporal-ui",
        "mcp-server",
        "mcp-worker",
    } <= services().keys()
    assert services()["mcp-worker"]["command"] == ["mcp-tasks", "worker"]
    assert services()["mcp-server"]["command"] == ["mcp-tasks", "server"]


def test_every_mcp_tasks_variable_in_compose_is_a_real_setting() -> None:
    for name, service in services().items():
        for variable in service.get("environment", {}):
            if variable.startswith("MCP_TASKS_"):
                assert variable in SETTINGS, f"{name}: {variable} is read by nothing"


def test_server_and_worker_meet_on_the_same_namespace_and_task_queue() -> None:
    server, worker = (
        services()["mcp-server"]["environment"],
        services()["mcp-worker"]["environment"],
    )
    for key in (
        "MCP_TASKS_TEMPORAL_ADDRESS",
        "MCP_TASKS_NAMESPACE",
        "MCP_TASKS_TASK_QUEUE",
        "MCP_TASKS_TOOLSET",
    ):
        assert server[key] == worker[key], key


def test_settings_are_read_from_the_environment() -> None:
    env = {"MCP_TASKS_PORT": "9001", "MCP_TASKS_TLS": "true", "MCP_TASKS_ALLOWED_HOSTS": "a, b"}
    settings = Settings.from_env(env, host="0.0.0.0")
    assert (settings.port, settings.tls, settings.allowed_hosts, settings.host) == (
        9001,
        True,
        ("a", "b"),
        "0.0.0.0",
    )


def test_the_public_server_in_compose_requires_authentication() -> None:
    server = services()["mcp-server"]["environment"]
    assert server["MCP_TASKS_HOST"] == "0.0.0.0"
    assert server["MCP_TASKS_AUTH"] in {"tokens", "jwt"}
    assert "MCP_TASKS_INSECURE" not in server


def published(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(host address, host port) of every port a service publishes, short or long syntax."""
    found: list[tuple[str, str]] = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            found.append((str(port.get("host_ip", "")), str(port.get("published", ""))))
            continue
        parts = str(port).split(":")
        if len(parts) == 3:
            found.append((parts[0], parts[1]))
        elif len(parts) == 2:
            found.append(("", parts[0]))
        else:
            found.append(("", parts[0]))  # a container port alone: a random host port
    return found


def test_only_the_mcp_server_is_published_on_every_interface() -> None:
    # Temporal's frontend and UI have no authentication in compose: reaching them bypasses
    # every MCP check (a raw `temporal workflow signal` answers anyone's approval).
    for name, service in services().items():
        for address, port in published(service):
            if name != "mcp-server":
                assert address == "127.0.0.1", f"{name} publishes {port} on every interface"
    assert not published(services()["temporal"])
    assert published(services()["temporal-ui"]) == [("127.0.0.1", "8080")]


def test_the_state_secret_has_no_default_in_compose() -> None:
    value = services()["mcp-server"]["environment"]["MCP_TASKS_STATE_SECRET"]
    assert value.startswith("${MCP_TASKS_STATE_SECRET:?"), value
    assert ":-" not in value and "change-me" not in COMPOSE.read_text()


@pytest.mark.skipif(
    shutil.which("docker-compose") is None and not os.environ.get("CI"),
    reason="docker-compose not installed (.ci/run installs it; in CI this test never skips)",
)
def test_docker_compose_validates_the_file_and_refuses_it_without_a_secret() -> None:
    command = ["docker-compose", "-f", str(COMPOSE), "config", "-q"]
    env = {k: v for k, v in os.environ.items() if k != "MCP_TASKS_STATE_SECRET"}
    refused = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "MCP_TASKS_STATE_SECRET" in refused.stderr
    env["MCP_TASKS_STATE_SECRET"] = "x" * 64
    accepted = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert accepted.returncode == 0, accepted.stderr


def test_a_public_server_refuses_to_start_without_a_state_secret() -> None:
    public = Settings(host="0.0.0.0", insecure=True, allowed_hosts=("mcp.lan",))
    with pytest.raises(ValueError, match="MCP_TASKS_STATE_SECRET is required"):
        create_app(public, ToolRegistry())
    create_app(public.with_(state_secret="s" * 32), ToolRegistry())
    assert [len(key) for key in state_secret(Settings())] == [32]  # loopback: a random key


def test_the_server_command_names_the_missing_state_secret(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"tokens": []}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_TASKS_")}
    # Nothing listens on port 9: the refusal comes before any call to Temporal.
    env |= {"MCP_TASKS_AUTH": "tokens", "MCP_TASKS_TOKENS_FILE": str(tokens),
            "MCP_TASKS_TEMPORAL_ADDRESS": "127.0.0.1:9"}  # fmt: skip
    mcp_tasks = str(Path(sys.executable).parent / "mcp-tasks")
    done = subprocess.run([mcp_tasks, "server", "--host", "0.0.0.0"], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    last_line = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1
    assert last_line.startswith("mcp-tasks: MCP_TASKS_STATE_SECRET is required to serve on 0.0.0.0")


@pytest.mark.skipif(
    shutil.which("docker-compose") is None and not os.environ.get("CI"),
    reason="docker-compose not installed (.ci/run installs it; in CI this test never skips)",
)
def test_the_documented_tools_override_mounts_the_tools_on_server_and_worker(
    tmp_path: Path,
) -> None:
    """docs/operations/deploy.md's docker-compose.override.yml, validated with the file."""
    page = (COMPOSE.parent / "docs" / "operations" / "deploy.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", page, re.S)
    assert block, "the deploy page has no override block"
    override = tmp_path / "docker-compose.override.yml"
    override.write_text(textwrap.dedent(block.group(1)))
    command = ["docker-compose", "-f", str(COMPOSE), "-f", str(override), "config"]
    env = {**os.environ, "MCP_TASKS_STATE_SECRET": "x" * 64}
    merged = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    config = yaml.safe_load(merged.stdout)
    for name in ("mcp-server", "mcp-worker"):
        service = config["services"][name]
        assert service["environment"]["MCP_TASKS_TOOL_MODULES"] == "/tools/my_tools.py"
        assert any(str(volume).endswith(":/tools:ro") for volume in service["volumes"])
