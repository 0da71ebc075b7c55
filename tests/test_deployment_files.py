"""docker-compose.yml stays wired to the settings the code really reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mcp_server.runtime.config import Settings

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
