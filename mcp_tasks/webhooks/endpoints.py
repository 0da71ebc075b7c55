"""The webhook endpoints operators configure: a JSON file named by `MCP_TASKS_WEBHOOKS_FILE`.

    [{"id": "ops", "url": "https://hooks.example.com/mcp", "secret_env": "OPS_HOOK_SECRET",
      "events": ["input_required", "completed", "failed", "cancelled"],
      "tools": ["deploy"], "format": "json"}]

Rules implemented:
- The file holds a list of endpoints. `id`: 1-64 of A-Z a-z 0-9 _ -, unique in the file; `url`:
  http or https with a host (only these URLs are ever called, never one a client names);
  `events`: a non-empty list of `input_required`, `completed`, `failed`, `cancelled`; `tools`
  (optional): the tools whose tasks it hears of, every tool when absent; `format`: `json` (the
  default, signed) or `slack` (a Slack incoming-webhook `{"text": ...}`).
- The secret that signs the deliveries (mcp_tasks/webhooks/signature.py, Standard Webhooks) is
  `secret` or `secret_env`, the name of an environment variable that holds it: exactly one of
  them, except that a `slack` endpoint may have none (Slack does not check signatures; its URL
  is its secret). Either may be a list, to rotate: every delivery is signed with each secret.
  A secret is `whsec_<base64 of 24-64 bytes>`, or (as earlier releases took) a plain one of
  at least 16 characters, whose key is its UTF-8 bytes.
- The server reads only ids, events and tools (`resolve_secrets=False`): it puts the ids of
  the endpoints a task's tool notifies into the task, never a URL or a secret. A worker
  resolves the secrets as it starts: a `secret_env` that is unset or empty is an error there.
- Any problem is a `ConfigError` whose one line names the file, the entry and the key.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mcp_tasks.settings import ConfigError, describe, key_path
from mcp_tasks.webhooks.signature import SecretError, signing_key

WebhookEvent = Literal["input_required", "completed", "failed", "cancelled"]
EVENTS: tuple[WebhookEvent, ...] = ("input_required", "completed", "failed", "cancelled")
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_SECRETS = 4


class _Entry(BaseModel):
    """One endpoint as the file writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    url: str
    secret: str | tuple[str, ...] | None = Field(default=None, repr=False)
    secret_env: str | tuple[str, ...] | None = None
    events: tuple[WebhookEvent, ...] = Field(min_length=1)
    tools: tuple[str, ...] | None = None
    format: Literal["json", "slack"] = "json"

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.fullmatch(value):
            raise ValueError("must be 1-64 characters of A-Z, a-z, 0-9, _ and -")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        try:
            parts = urlsplit(value)
            host = parts.hostname
        except ValueError:
            host = None
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not host:
            raise ValueError("must be an http:// or https:// URL with a host")
        if any(c.isspace() for c in value):
            raise ValueError("must not contain whitespace")
        return value

    @field_validator("secret", "secret_env")
    @classmethod
    def _some(cls, value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
        if isinstance(value, tuple) and not 1 <= len(value) <= MAX_SECRETS:
            raise ValueError(f"must list 1 to {MAX_SECRETS} secrets")
        return value

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
        for secret in _listed(value):
            try:
                signing_key(secret)
            except SecretError as err:
                raise ValueError(str(err)) from None
        return value

    @model_validator(mode="after")
    def _one_secret(self) -> _Entry:
        if self.secret is not None and self.secret_env is not None:
            raise ValueError("give either secret or secret_env, not both")
        if self.secret is None and self.secret_env is None and self.format != "slack":
            raise ValueError("needs a secret or a secret_env (the key that signs deliveries)")
        return self


def _listed(value: str | tuple[str, ...] | None) -> tuple[str, ...]:
    return () if value is None else (value,) if isinstance(value, str) else value


@dataclass(frozen=True)
class WebhookEndpoint:
    """One endpoint, validated; `keys` (the signing keys, one per secret) is empty when
    unresolved (the server) or unsigned."""

    id: str
    url: str = ""
    keys: tuple[bytes, ...] = ()
    events: frozenset[str] = frozenset()
    tools: frozenset[str] | None = None
    format: Literal["json", "slack"] = "json"

    def __repr__(self) -> str:  # the URL and the secret are both secrets of the operator's
        return f"WebhookEndpoint(id={self.id!r}, events={sorted(self.events)})"

    def hears(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools


class WebhookEndpoints:
    """The configured endpoints, by id."""

    def __init__(self, endpoints: Sequence[WebhookEndpoint] = ()) -> None:
        self._by_id = {endpoint.id: endpoint for endpoint in endpoints}

    def __len__(self) -> int:
        return len(self._by_id)

    def get(self, endpoint_id: str) -> WebhookEndpoint | None:
        return self._by_id.get(endpoint_id)

    def for_tool(self, tool: str) -> list[dict[str, Any]]:
        """What a task of `tool` carries (TaskInput.webhooks): the ids and events of the
        endpoints that hear of it, in the file's order. No URL, no secret."""
        return [
            {"endpoint": e.id, "events": [event for event in EVENTS if event in e.events]}
            for e in self._by_id.values()
            if e.hears(tool)
        ]


def load_endpoints(
    path: str | None, *, resolve_secrets: bool, env: Mapping[str, str] | None = None
) -> WebhookEndpoints:
    """The endpoints of the file at `path` (none without a path); ConfigError when unusable."""
    if path is None:
        return WebhookEndpoints()
    where = f"MCP_TASKS_WEBHOOKS_FILE {path}"
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"{where}: cannot be read: {err.strerror or err}") from None
    except (UnicodeError, json.JSONDecodeError) as err:
        raise ConfigError(f"{where}: is not valid JSON: {err}") from None
    if not isinstance(document, list):
        raise ConfigError(f"{where}: must be a JSON list of endpoints")
    source = os.environ if env is None else env
    endpoints: list[WebhookEndpoint] = []
    for index, item in enumerate(document):
        try:
            entry = _Entry.model_validate(item)
        except ValidationError as err:
            problems = [
                f"[{index}]{'.' if error['loc'] else ''}{key_path(error['loc'])}: {describe(error)}"
                for error in err.errors()
            ]
            raise ConfigError(f"{where}: {'; '.join(problems)}") from None
        if any(e.id == entry.id for e in endpoints):
            raise ConfigError(f"{where}: [{index}].id: {entry.id!r} is used twice")
        keys = _keys(entry, source, f"{where}: [{index}]") if resolve_secrets else ()
        endpoints.append(
            WebhookEndpoint(
                id=entry.id,
                url=entry.url if resolve_secrets else "",
                keys=keys,
                events=frozenset(entry.events),
                tools=frozenset(entry.tools) if entry.tools is not None else None,
                format=entry.format,
            )
        )
    return WebhookEndpoints(endpoints)


def _keys(entry: _Entry, env: Mapping[str, str], where: str) -> tuple[bytes, ...]:
    """The signing keys of an entry: its secrets, or those its variables hold."""
    if entry.secret is not None:
        return tuple(signing_key(secret) for secret in _listed(entry.secret))
    keys: list[bytes] = []
    for name in _listed(entry.secret_env):
        secret = env.get(name, "")
        try:
            keys.append(signing_key(secret))
        except SecretError as err:
            state = "it is not set" if not secret else str(err)
            raise ConfigError(
                f"{where}.secret_env: the environment variable {name} must hold a webhook "
                f"secret ({state})"
            ) from None
    return tuple(keys)
