"""deploy/existing-cluster: the compose file that joins a team's own Temporal, as Debian's
docker-compose 1.29 resolves it (`config`, the check a real `up` starts with)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_tasks.settings import Settings

FOLDER = Path(__file__).resolve().parents[2] / "deploy" / "existing-cluster"
SETTINGS = {f"MCP_TASKS_{name.upper()}" for name in Settings.model_fields}
REQUIRED = {
    "MCP_TASKS_TEMPORAL_ADDRESS": "temporal.example.com:7233",
    "MCP_TASKS_NAMESPACE": "mcp-prod",
    "MCP_TASKS_PUBLIC_URL": "https://mcp.example.com",
    "MCP_TASKS_STATE_SECRET": "s" * 64,
}
MTLS = {
    "MCP_TASKS_TLS_CERT_PATH": "/certs/client.pem",
    "MCP_TASKS_TLS_KEY_PATH": "/certs/client.key",
    "MCP_TASKS_TLS_CA_PATH": "/certs/ca.pem",
}
API_KEY = {"MCP_TASKS_API_KEY": "a-cloud-api-key"}
needs_compose = pytest.mark.skipif(
    shutil.which("docker-compose") is None and not os.environ.get("CI"),
    reason="docker-compose not installed (.ci/run installs it; in CI this test never skips)",
)


def compose(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`docker-compose --env-file .env.example ... config` with `env` over a clean shell."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_TASKS_", "TEMPORAL_"))}
    return subprocess.run(
        ["docker-compose", "--env-file", ".env.example", "config", *args],
        cwd=FOLDER,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def resolved(env: dict[str, str]) -> dict[str, Any]:
    done = compose(env)
    assert done.returncode == 0, done.stderr
    return dict(yaml.safe_load(done.stdout)["services"])


def settings_of(service: dict[str, Any]) -> Settings:
    environment = service["environment"]
    return Settings.from_env({k: str(v) for k, v in environment.items() if k in SETTINGS})


@needs_compose
def test_only_setup_the_server_and_the_worker_run_and_both_wait_for_setup_to_succeed() -> None:
    services = resolved(REQUIRED)
    assert services.keys() == {"mcp-setup", "mcp-server", "mcp-worker"}
    assert services["mcp-setup"]["command"] == ["mcp-tasks", "setup"]
    assert services["mcp-setup"]["restart"] == "on-failure"
    assert not services["mcp-setup"].get("depends_on")
    for name, command in (("mcp-server", "server"), ("mcp-worker", "worker")):
        service = services[name]
        assert service["command"] == ["mcp-tasks", command]
        assert service["depends_on"] == {
            "mcp-setup": {"condition": "service_completed_successfully"}
        }, name
        assert service["restart"] == "unless-stopped", name
        assert service["healthcheck"]["test"][0] == "CMD", name


@needs_compose
def test_setup_server_and_worker_share_the_connection_and_the_files() -> None:
    services = resolved({**REQUIRED, **MTLS})
    connection = [settings_of(service) for service in services.values()]
    for settings in connection:
        assert (settings.temporal_address, settings.namespace) == (
            "temporal.example.com:7233",
            "mcp-prod",
        )
        assert (settings.tls_cert_path, settings.tls_key_path, settings.tls_ca_path) == (
            "/certs/client.pem",
            "/certs/client.key",
            "/certs/ca.pem",
        )
        assert settings.tls and settings.task_queue == connection[0].task_queue
    volumes = [service["volumes"] for service in services.values()]
    assert all(v == volumes[0] for v in volumes)
    targets = {volume.split(":")[1] for volume in volumes[0]}
    assert targets == {"/app/pipelines", "/app/imports", "/tools", "/certs"}
    assert all(v.endswith(":ro") for v in volumes[0] if ":/certs:" in v)


@needs_compose
def test_an_api_key_reaches_every_service_that_talks_to_temporal() -> None:
    for service in resolved({**REQUIRED, **API_KEY}).values():
        settings = settings_of(service)
        assert settings.api_key == "a-cloud-api-key" and not settings.tls_cert_path


@needs_compose
@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_compose_refuses_to_start_without_each_required_value(missing: str) -> None:
    done = compose({k: v for k, v in REQUIRED.items() if k != missing}, "-q")
    assert done.returncode != 0 and f"set {missing} in .env" in done.stderr


@needs_compose
def test_the_server_is_public_only_through_its_url_and_authenticates_with_tokens() -> None:
    server = settings_of(resolved(REQUIRED)["mcp-server"])
    assert server.public_url == "https://mcp.example.com" and server.auth == "tokens"
    ports = resolved(REQUIRED)["mcp-server"]["ports"]  # 1.29: "127.0.0.1:8000:8000/tcp"
    assert [str(port).split(":")[0] for port in ports] == ["127.0.0.1"]


def test_no_secret_is_written_in_the_files_and_every_variable_is_a_real_setting() -> None:
    text = (FOLDER / "docker-compose.yml").read_text()
    for variable in set(re.findall(r"^\s+(MCP_TASKS_[A-Z_]+):", text, re.M)):
        assert variable in SETTINGS, f"{variable} is read by nothing"
    for secret in ("MCP_TASKS_API_KEY", "MCP_TASKS_STATE_SECRET"):
        assert re.search(rf"{secret}: \$\{{{secret}:[-?]", text), secret
    for line in (FOLDER / ".env.example").read_text().splitlines():
        key, _, value = line.partition("=")
        if any(word in key for word in ("SECRET", "KEY", "PASSWORD", "TOKEN")):
            assert value == "", f".env.example gives {key} a value"
    ignored = (FOLDER / ".gitignore").read_text().split()
    assert {".env", "tokens.json"} <= set(ignored)
    assert (FOLDER / "certs" / ".gitignore").read_text().split() == ["*", "!.gitignore"]


def test_the_file_uses_nothing_docker_compose_1_29_rejects() -> None:
    document = yaml.safe_load((FOLDER / "docker-compose.yml").read_text())
    assert "include" not in document
    for secret in document.get("secrets", {}).values():
        assert "environment" not in secret
