"""Settings, read from the environment (`MCP_TASKS_*`) and overridden by command-line flags."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _flag(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    temporal_address: str = "127.0.0.1:7233"
    namespace: str = "default"
    task_queue: str = "mcp-tasks"
    toolset: str = "demo"
    tool_modules: tuple[str, ...] = ()
    # TLS / API key for a real cluster (Temporal Cloud or a self-hosted one with mTLS).
    tls: bool = False
    tls_cert_path: str | None = None
    tls_key_path: str | None = None
    tls_ca_path: str | None = None
    tls_server_name: str | None = None
    api_key: str | None = None
    # HMAC key of MRTR requestState; every server replica must share it.
    state_secret: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_body_bytes: int = 1024 * 1024
    # Authentication (see auth.py): none | tokens | jwt.
    auth: str = "none"
    insecure: bool = False
    tokens_file: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_jwks_url: str | None = None
    jwt_public_key_path: str | None = None
    jwt_algorithms: tuple[str, ...] = ("RS256", "ES256")
    jwt_required_scopes: tuple[str, ...] = ()
    jwt_leeway_s: int = 30
    public_url: str | None = None
    # Limits, each answered with a clear error.
    max_input_responses: int = 32
    max_input_response_bytes: int = 256 * 1024
    max_open_tasks_per_principal: int = 1000
    # tasks/get may run this many times faster than the task's pollIntervalMs, after a burst.
    poll_rate_factor: int = 4
    poll_burst: int = 20
    max_cached_workflows: int = 1000
    max_concurrent_activities: int = 100
    instructions: str | None = None
    # Where `deploy` finds pipeline files (a pipeline is only ever read from here).
    pipelines_dir: str = "pipelines"
    # `import_records` reads sources and writes databases only inside this directory.
    import_dir: str = "imports"
    # A TOML file mapping tool names to existing workflows (tools/exposed.py).
    exposed_workflows_file: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        source = os.environ if env is None else env
        values: dict[str, Any] = {}
        for field in fields(cls):
            raw = source.get(f"MCP_TASKS_{field.name.upper()}")
            if raw is None:
                continue
            default = field.default
            if isinstance(default, bool):
                values[field.name] = _flag(raw)
            elif isinstance(default, int):
                values[field.name] = int(raw)
            elif isinstance(default, tuple):
                values[field.name] = _split(raw)
            else:
                values[field.name] = raw
        settings = cls(**values)
        return replace(settings, **{k: v for k, v in overrides.items() if v is not None})
