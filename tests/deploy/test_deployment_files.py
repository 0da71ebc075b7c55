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

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"
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
    env |= {
        "MCP_TASKS_AUTH": "tokens",
        "MCP_TASKS_TOKENS_FILE": str(tokens),
        "MCP_TASKS_TEMPORAL_ADDRESS": "127.0.0.1:9",
    }
    mcp_tasks = str(Path(sys.executable).parent / "mcp-tasks")
    done = subprocess.run(
        [mcp_tasks, "server", "--host", "0.0.0.0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
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
    block = re.search(r"```yaml\n(\s*# docker-compose.override.yml\n.*?)```", page, re.S)
    assert block, "the deploy page has no docker-compose.override.yml block"
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


# ----- deploy/production: the stack for a team without a Temporal of its own -----

PRODUCTION = COMPOSE.parent / "deploy" / "production"
PRODUCTION_ENV = {
    "PUBLIC_HOST": "mcp.example.com",
    "MCP_TASKS_STATE_SECRET": "s" * 64,
    "POSTGRES_PASSWORD": "p" * 32,
}
# Run once and exit 0; what needs them waits with `service_completed_successfully`.
ONE_SHOT_JOBS = {"temporal-schema", "temporal-namespace", "mcp-setup"}
needs_compose = pytest.mark.skipif(
    shutil.which("docker-compose") is None and not os.environ.get("CI"),
    reason="docker-compose not installed (.ci/run installs it; in CI this test never skips)",
)


def production_config(*overrides: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`docker-compose config` of the production stack (with override files), as compose
    resolves it from .env.example plus `env`: the same check a real `up` starts with."""
    files = [arg for name in ("docker-compose.yml", *overrides) for arg in ("-f", name)]
    command = ["docker-compose", "--env-file", ".env.example", *files, "config"]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_TASKS_", "POSTGRES_"))}
    done = subprocess.run(
        command,
        cwd=PRODUCTION,
        env={**base, **(env or PRODUCTION_ENV)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return dict(yaml.safe_load(done.stdout))


@needs_compose
@pytest.mark.parametrize("overrides", [(), ("own-proxy.yml",)], ids=["caddy", "own-proxy"])
def test_docker_compose_validates_every_production_variant(overrides: tuple[str, ...]) -> None:
    config = production_config(*overrides)
    assert {
        "postgresql",
        "temporal-schema",
        "temporal",
        "temporal-namespace",
        "mcp-server",
        "mcp-worker",
        "caddy",
    } <= config["services"].keys()
    server_ports = published(config["services"]["mcp-server"])
    assert server_ports == ([("127.0.0.1", "8000")] if overrides else [])


@needs_compose
@pytest.mark.parametrize("missing", sorted(PRODUCTION_ENV))
def test_the_production_stack_refuses_to_start_without_each_secret_and_the_public_host(
    missing: str,
) -> None:
    command = ["docker-compose", "--env-file", ".env.example", "config", "-q"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_TASKS_", "POSTGRES_"))}
    env |= {k: v for k, v in PRODUCTION_ENV.items() if k != missing}
    done = subprocess.run(
        command, cwd=PRODUCTION, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and f"set {missing} in .env" in done.stderr


def production_services() -> dict[str, Any]:
    return dict(yaml.safe_load((PRODUCTION / "docker-compose.yml").read_text())["services"])


def secret_like(name: str) -> bool:
    return re.search(r"PASSWORD|PWD|SECRET|TOKEN(?!S_FILE)|_KEY$", name) is not None


def test_no_password_or_secret_is_written_in_the_production_files() -> None:
    for name, service in production_services().items():
        environment = service.get("environment", {})
        for variable, value in environment.items():
            if secret_like(variable) and variable != "<<":
                assert re.fullmatch(r"\$\{[A-Z_]+:\?[^}]+\}", str(value)), (name, variable)
    for line in (PRODUCTION / ".env.example").read_text().splitlines():
        key, _, value = line.partition("=")
        if not line.startswith("#") and secret_like(key):
            assert value == "", f".env.example gives {key} a value"
    postgres_login = yaml.safe_load((PRODUCTION / "docker-compose.yml").read_text())
    assert postgres_login["x-postgres-login"]["POSTGRES_PASSWORD"].startswith(
        "${POSTGRES_PASSWORD:?"
    )


@needs_compose
def test_every_production_service_has_a_healthcheck_and_a_restart_policy() -> None:
    for name, service in production_config()["services"].items():
        if name in ONE_SHOT_JOBS:
            # A job's health is its exit status: it is retried until it succeeds, and nothing
            # that needs it starts before.
            assert service["restart"] == "on-failure", name
            continue
        assert service["restart"] == "unless-stopped", name
        assert service["healthcheck"]["test"][0] in {"CMD", "CMD-SHELL"}, name
    waits_on = {
        condition["condition"]
        for service in production_config()["services"].values()
        for dependency, condition in service.get("depends_on", {}).items()
        if dependency in ONE_SHOT_JOBS
    }
    assert waits_on == {"service_completed_successfully"}


@needs_compose
def test_nothing_but_the_tls_proxy_is_published_on_every_interface() -> None:
    for overrides in ((), ("own-proxy.yml",)):
        services = production_config(*overrides)["services"]
        for name, service in services.items():
            for address, port in published(service):
                assert name == "caddy" or address == "127.0.0.1", (name, port)
        assert not any(published(services[name]) for name in ("temporal", "postgresql"))
        assert sorted(published(services["caddy"])) == [("", "443"), ("", "80")]


def test_temporal_is_set_up_by_its_own_tools_not_auto_setup() -> None:
    services = production_services()
    assert services["temporal"]["image"].startswith("temporalio/server:")
    assert not any("auto-setup" in service["image"] for service in services.values())
    schema = (PRODUCTION / "temporal-schema.sh").read_text()
    assert services["temporal-schema"]["image"].startswith("temporalio/admin-tools:")
    assert (
        services["temporal-schema"]["image"]
        .split(":")[1]
        .startswith(services["temporal"]["image"].split(":")[1])
    ), "the schema tool must come from the server's own release"
    for step in ("create", "setup-schema -v 0.0", "update-schema -d"):
        assert f'temporal-sql-tool --db "$database" {step}' in schema


@needs_compose
def test_the_public_url_is_the_tls_name_and_the_server_and_worker_share_their_files() -> None:
    services = production_config()["services"]
    server, worker = services["mcp-server"], services["mcp-worker"]
    assert server["environment"]["MCP_TASKS_PUBLIC_URL"] == "https://mcp.example.com"
    assert services["caddy"]["environment"]["PUBLIC_HOST"] == "mcp.example.com"
    settings = Settings.from_env(
        {k: str(v) for k, v in server["environment"].items() if k.startswith("MCP_TASKS_")}
    )
    assert settings.public_url == "https://mcp.example.com" and settings.auth == "tokens"
    targets = {volume.split(":")[1] for volume in server["volumes"]}
    assert targets == {"/app/pipelines", "/app/imports", "/tools"}
    assert server["volumes"] == worker["volumes"]
    for key in ("MCP_TASKS_TEMPORAL_ADDRESS", "MCP_TASKS_NAMESPACE", "MCP_TASKS_TASK_QUEUE"):
        assert server["environment"][key] == worker["environment"][key], key


def test_every_mcp_tasks_variable_in_the_production_stack_is_a_real_setting() -> None:
    text = (PRODUCTION / "docker-compose.yml").read_text()
    for variable in set(re.findall(r"^\s+(MCP_TASKS_[A-Z_]+):", text, re.M)):
        assert variable in SETTINGS, f"{variable} is read by nothing"


@needs_compose
def test_the_documented_production_commands_give_a_stack_compose_accepts(tmp_path: Path) -> None:
    """docs/operations/deploy.md's production block, run as written in a copy of the folder
    (the values of .env filled in as its comment says, and `config` for `up`): the tokens file
    the compose secret names exists, and compose accepts the result."""
    page = (COMPOSE.parent / "docs" / "operations" / "deploy.md").read_text()
    block = re.search(r"( *)```bash\n(\1cd deploy/production\n.*?)\1```", page, re.S)
    assert block, "the deploy page has no production block"
    shutil.copytree(PRODUCTION, tmp_path / "deploy" / "production")
    (tmp_path / "pipelines").mkdir()
    filled = " ".join(f"-e 's/^{name}=$/{name}={value}/'" for name, value in PRODUCTION_ENV.items())
    script = textwrap.dedent(block.group(2)).replace(
        "docker compose up -d --build", f"sed -i {filled} .env && docker-compose config -q"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_TASKS_", "POSTGRES_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    tokens = tmp_path / "deploy" / "production" / "tokens.json"
    assert '"principal": "you"' in tokens.read_text().replace("'", '"')
