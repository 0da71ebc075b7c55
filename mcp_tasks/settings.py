"""Settings, read from the environment (`MCP_TASKS_*`) and overridden by command-line flags.

Every value is validated here, once, before anything starts:
- integers are integers within their bounds (a port is 1-65535, a size is positive, a limit is
  never negative);
- `auth` is one of none, tokens, jwt; `jwt_algorithms` never holds `none`;
- booleans are 1/true/yes/on or 0/false/no/off (any case); lists are comma-separated.
A bad value is a `ConfigError` whose one-line message names the variable, the value and the
problem (`MCP_TASKS_PORT='eighty': must be an integer`), which the CLI prints as is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from mcp_tasks.contracts.approvers import invalid_approvers
from mcp_tasks.payload_keys import parse_keys

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """A setting or a configuration file that cannot be used; the message is one line."""


def _split(value: object) -> object:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def _flag(value: object) -> object:
    if not isinstance(value, str):
        return value
    word = value.strip().lower()
    if word not in _TRUE | _FALSE:
        raise ValueError("must be a boolean: 1, true, yes, on or 0, false, no, off")
    return word in _TRUE


# Settings whose values a message never shows.
_HIDDEN = frozenset({"payload_key", "state_secret"})

Flag = Annotated[bool, BeforeValidator(_flag)]
CommaList = Annotated[tuple[str, ...], BeforeValidator(_split)]
Port = Annotated[int, Field(ge=1, le=65535)]
Positive = Annotated[int, Field(ge=1)]
NonNegative = Annotated[int, Field(ge=0)]
# A scope token (RFC 6749 §3.3): visible ASCII without a quote or a backslash.
ScopeToken = Annotated[str, Field(pattern=r"^[\x21\x23-\x5b\x5d-\x7e]+$")]


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # The address the HTTP server listens on (`--host`).
    host: str = "127.0.0.1"
    # The port the HTTP server listens on (`--port`).
    port: Port = 8000
    # Temporal frontend (`dev` and `stdio --dev` use their embedded server)
    temporal_address: str = "127.0.0.1:7233"
    # The Temporal namespace of every task.
    namespace: str = "default"
    # The task queue the task workflows run on (the worker polls it).
    task_queue: str = "mcp-tasks"
    # The built-in toolset served, `demo` or `conformance` (`--toolset`).
    toolset: str = "demo"
    # Your own tool modules, by module name or file path (`--tools`).
    tool_modules: CommaList = ()
    # TLS / API key for a real cluster (Temporal Cloud or a self-hosted one with mTLS).
    tls: Flag = False
    # mTLS: the client certificate presented to the cluster.
    tls_cert_path: str | None = None
    # mTLS: the client certificate's private key.
    tls_key_path: str | None = None
    # TLS: the CA that signed the cluster's certificate (default: the system's).
    tls_ca_path: str | None = None
    # TLS: the server name to verify the cluster's certificate against.
    tls_server_name: str | None = None
    # Temporal Cloud API key (implies TLS)
    api_key: str | None = None
    # AES-256-GCM keys of the payload codec (temporal/codec.py), newest first; never printed.
    payload_key: CommaList = Field(default=(), repr=False)
    # HMAC keys of MRTR requestState, 2025-11-25 session ids and inbox cookies, comma-separated,
    # each at least 16 characters: the first signs, any listed verifies (to rotate, put the new
    # key first and drop the old one a day later; docs/operations/maintenance.md). Every server
    # replica must share them. Required on a non-loopback address (the server refuses to start
    # without it); on loopback, random per process (`dev`, `stdio --dev`: kept in the data dir).
    state_secret: str | None = Field(default=None, repr=False)
    # DNS-rebinding protection: the `Host` values accepted (403 otherwise; loopback only when
    # bound to loopback).
    allowed_hosts: CommaList = ()
    # DNS-rebinding protection: the `Origin` values accepted (403 otherwise).
    allowed_origins: CommaList = ()
    # Larger requests get 413 before parsing.
    max_body_bytes: Positive = 1024 * 1024
    # A whole request (head and body) must arrive within this time of the connection opening
    # or of the previous response; a connection idle this long after a response is closed.
    # Longer than the idle expiry of common client pools (httpx 5 s, Node's undici 4 s): at
    # an equal time a client reuses the connection as the server closes it (a ReadError).
    http_request_timeout_s: float = Field(default=20.0, gt=0, le=3600)
    # An idle keep-alive connection is closed after this (longer than the idle expiry of common
    # client pools, so that a client never reuses a connection just as the server closes it).
    http_keep_alive_s: float = Field(default=15.0, gt=0, le=3600)
    # uvicorn's HTTP parser: httptools (C) when installed, else h11 (http/timeouts.py).
    http_parser: Literal["auto", "httptools", "h11"] = "auto"
    # The serving commands' event loop: uvloop when installed, else asyncio (event_loop.py).
    event_loop: Literal["auto", "uvloop", "asyncio"] = "auto"
    # `dev`: a create made while no other start is in flight asks Temporal to hand the new
    # task's first workflow task straight to the worker of the same process (eager workflow
    # start, tasks/starts.py).
    eager_start: Flag = True
    # On SIGTERM: how long requests in flight may take to finish before the HTTP server closes
    # them (long-lived streams: subscriptions/listen, attached runs); their tasks run on.
    http_shutdown_grace_s: float = Field(default=15.0, gt=0, le=3600)
    # How callers authenticate: `none` (one local user), `tokens` or `jwt` (`--auth`).
    auth: Literal["none", "tokens", "jwt"] = "none"
    # Allow `--auth none` on a non-loopback address (`--insecure`; taskIds become bearer
    # secrets).
    insecure: Flag = False
    # `--auth tokens`: the file of token hashes (`mcp-tasks token add|list|revoke`).
    tokens_file: str | None = None
    # `--auth jwt`: the issuer (`iss`) a token must name.
    jwt_issuer: str | None = None
    # `--auth jwt`: the audience (`aud`) a token must name.
    jwt_audience: str | None = None
    # `--auth jwt`: where the signing keys are published (JWKS).
    jwt_jwks_url: str | None = None
    # `--auth jwt`: a PEM public key, instead of a JWKS URL.
    jwt_public_key_path: str | None = None
    # `--auth jwt`: the signing algorithms accepted (never `none`).
    jwt_algorithms: CommaList = ("RS256", "ES256")
    # `--auth jwt`: scopes every token must hold.
    jwt_required_scopes: CommaList = ()
    # `--auth jwt`: clock skew allowed on `exp` and `nbf`, in seconds.
    jwt_leeway_s: NonNegative = 30
    # The server's public base URL (`https://mcp.example.com`): its host is an allowed `Host`
    # and its origin an allowed `Origin` (every other Host gets 403 unless listed in
    # `allowed_hosts`); also named in `WWW-Authenticate` (`jwt`) and in webhooks' links.
    public_url: str | None = None
    # How long an approval-inbox sign-in lasts (60 s to 7 days).
    inbox_session_s: int = Field(default=8 * 3600, ge=60, le=7 * 86400)
    # Mark the inbox cookie `Secure` on plain http too (behind a TLS-terminating proxy).
    inbox_secure_cookie: Flag = False
    # Answers (`inputResponses`) one request may carry.
    max_input_responses: NonNegative = 32
    # The size of one answer, in bytes.
    max_input_response_bytes: Positive = 256 * 1024
    # Open tasks per caller and task queue, exactly (0: no quota; otherwise `-31001`).
    max_open_tasks_per_principal: NonNegative = 1000
    # Slots granted below an eighth of that limit are given back lazily: their tasks send no
    # release, the quota workflow finds them closed (workflows/quota.py). False: every task
    # releases its slot as it closes.
    quota_lazy_release: Flag = True
    # How long a host without task support waits on a task tool before the call returns a
    # result naming the task and the follow-up tools (well under usual host time-outs).
    sync_wait_s: float = Field(default=45.0, gt=0, le=600)
    # tasks/get may run this many times faster than the task's pollIntervalMs, after a burst.
    poll_rate_factor: Positive = 4
    # `tasks/get`: the burst allowed above the rate `poll_rate_factor` sets.
    poll_burst: Positive = 20
    # The pollIntervalMs a task advertises grows with its quiet time up to this (or its tool's
    # interval if larger); 0: always the tool's interval (tasks/poll_interval.py).
    poll_interval_max_ms: NonNegative = 60_000
    # Open listen streams (`subscriptions/listen`, 2025-11-25 session streams, inbox
    # pages) per caller.
    max_listen_streams_per_principal: Positive = 10
    # Open listen streams per replica.
    max_listen_streams: Positive = 200
    # Tasks one `subscriptions/listen` stream may follow.
    max_listen_task_ids: Positive = 100
    # Tasks watched at once per replica (each watcher holds one long-poll on Temporal).
    max_watched_tasks: Positive = 500
    # Running tasks a replica follows to answer their polls without reading Temporal
    # (mcp_server/tasks/followed.py; each holds one history long-poll: 180 calls an hour when
    # quiet); 0: every tasks/get reads Temporal.
    max_followed_tasks: NonNegative = 2000
    # The memo kept for them per replica, in MiB; beyond, the least recently read is let go.
    max_followed_mib: Positive = 64
    # Per principal: `tasks/update` and `task_respond` per minute (a token bucket; 0: no
    # limit).
    update_rate_per_minute: NonNegative = 600
    # Per principal: the burst of `tasks/update` and `task_respond`.
    update_burst: Positive = 100
    # Per principal: `tasks/cancel` (both eras) and `task_cancel` per minute (0: no limit).
    cancel_rate_per_minute: NonNegative = 600
    # Per principal: the burst of `tasks/cancel` and `task_cancel`.
    cancel_burst: Positive = 100
    # Per principal: task lookups answered "not found" per minute (0: no limit).
    not_found_rate_per_minute: NonNegative = 600
    # Per principal: the burst of lookups answered "not found".
    not_found_burst: Positive = 100
    # Per principal: `events/subscribe` and `events/unsubscribe` per minute (each may POST a
    # handshake and writes to Temporal; 0: no limit).
    events_rate_per_minute: NonNegative = 30
    # Per principal: the burst of `events/subscribe` and `events/unsubscribe`.
    events_burst: Positive = 20
    # Per principal: 2025-11-25 `initialize` per minute (0: no limit).
    initialize_rate_per_minute: NonNegative = 60
    # Per principal: the burst of 2025-11-25 `initialize`.
    initialize_burst: Positive = 60
    # Per principal and replica: 2025-11-25 session task lists held open; the list a task
    # opens past it closes the principal's least recently used one (nothing is refused).
    session_lists_per_principal: Positive = 100
    # Worker sizing: workflows kept in the worker's cache (0: no cache).
    max_cached_workflows: NonNegative = 1000
    # Worker sizing: activities one worker runs at once.
    max_concurrent_activities: Positive = 100
    # How often each worker deletes the expired tasks of its task queue (tasks/expiry.py).
    expiry_sweep_s: float = Field(default=300.0, gt=0, le=86400)
    # the `instructions` of `initialize` and `server/discover`
    instructions: str | None = None
    # Where `deploy` finds pipeline files (a pipeline is only ever read from here), relative to
    # the working directory unless absolute; a worker warns at start when it does not exist.
    pipelines_dir: str = "pipelines"
    # `import_records` reads sources and writes databases only inside this directory (relative
    # to the working directory unless absolute; a worker warns at start when it does not exist).
    import_dir: str = "imports"
    # Chunks one run of an import workflow commits before it continues as new (its history
    # stays short; the taskId stays). Read by the server when it starts an import.
    import_chunks_per_run: Positive = 200
    # Approvers: who decides a `request_approval` call that names none (empty: its
    # caller), e.g. `release-manager,scope:release`; whether an approver may cancel a task.
    approval_approvers: CommaList = ()
    # whether an approver of a task may cancel it (otherwise `-31002`)
    approvers_may_cancel: Flag = False
    # Who may name approvers in a tool call's `approvers` argument: `callers`
    # (anyone), `scope` (callers holding approver_naming_scope), `operator` (nobody: only
    # MCP_TASKS_APPROVAL_APPROVERS and pipeline files name them). Unset: `operator` when
    # approval_approvers is set (the operator's list wins), else `callers`. A caller never
    # names itself (its subject or a scope it holds) unless approvers_may_include_caller.
    approver_naming: Literal["callers", "scope", "operator"] | None = None
    # The scope that lets a caller name approvers under `approver_naming=scope`.
    approver_naming_scope: ScopeToken = "approvers"
    # whether a caller may name itself (its name, or a scope it holds) as an approver (otherwise
    # `-31003`)
    approvers_may_include_caller: Flag = False
    # Per principal: calls that start a task whose questions wait for approvers (each fires
    # the task's webhooks), a token bucket of `burst` refilled at the rate (0: no limit).
    approver_request_rate_per_minute: NonNegative = 30
    # Per principal: the burst of calls that start a task waiting for approvers.
    approver_request_burst: Positive = 30
    # A TOML file mapping tool names to existing workflows (tools/exposed.py).
    exposed_workflows_file: str | None = None
    # A JSON file listing the webhook endpoints tasks notify (mcp_tasks/webhooks/endpoints.py),
    # read by the server (which endpoints a task's tool notifies) and every worker (URLs, secrets).
    webhooks_file: str | None = None
    # Operations (docs/operations/observability.md): log format (None: text for dev/stdio,
    # json otherwise); /metrics also on a listener of its own without authentication (None:
    # only on the main port, behind authentication); the worker's Temporal SDK metrics (None:
    # off); how often the open-task gauges are refreshed; how recent a poller must be for
    # /readyz; OTLP.
    log_format: Literal["text", "json"] | None = None
    # The host of the unauthenticated `/metrics` listener (`metrics_port`).
    metrics_host: str = "127.0.0.1"
    # Also serve `/metrics` without authentication on this port (on the MCP port it is
    # always served, behind authentication).
    metrics_port: Port | None = None
    # the Temporal SDK's Prometheus metrics of the worker, on `MCP_TASKS_METRICS_HOST`
    worker_metrics_port: Port | None = None
    # how often the open-task, input-wait and workers gauges are refreshed (in the background)
    metrics_refresh_s: float = Field(default=15.0, gt=0, le=3600)
    # `mcp_tasks_workers_polling` counts a worker whose poller Temporal saw at most this long ago
    ready_poller_max_age_s: float = Field(default=75.0, gt=0)
    # The embedded Temporal's SQLite (dev, stdio --dev): `full` syncs every commit, so what was
    # acknowledged survives a power loss; `normal` is faster and survives a process crash only.
    sqlite_synchronous: Literal["full", "normal"] = "full"
    # OTLP/HTTP collector for traces (needs the `otel` extra)
    otlp_endpoint: str | None = None
    # Draining and upgrading workers (docs/operations/maintenance.md).
    # On SIGTERM the worker stops taking work and lets the activities it runs finish for this
    # long before it cancels them (a cancelled step runs again elsewhere): longer than your
    # typical step, and shorter than the orchestrator's grace (Kubernetes
    # terminationGracePeriodSeconds, compose stop_grace_period), which then kills it.
    worker_shutdown_grace_s: float = Field(default=60.0, gt=0, le=86400)
    # Worker Versioning: the Worker Deployment this worker belongs to (unset: an unversioned
    # worker; a change to a workflow then goes through `workflow.patched`).
    worker_deployment_name: str | None = None
    # Worker Versioning: this worker's build id in its deployment (required with the name).
    worker_build_id: str | None = None
    # Worker Versioning: `pinned` (a task runs on the build that started it, to its end) or
    # `auto_upgrade` (it moves to the deployment's current build); the open-task quota workflow
    # always moves.
    worker_versioning_behavior: Literal["pinned", "auto_upgrade"] = "pinned"

    # ----- Push: webhooks on the Standard Webhooks profile, client-subscribed events (#29) -----
    # A worker suspends a webhook endpoint while, of its attempts of the last
    # `webhook_suspend_window_s` seconds, at least `webhook_suspend_min_attempts` were made and at
    # least `webhook_suspend_failure_rate` of them failed (activities/webhook_health.py)
    webhook_suspend_window_s: float = Field(default=3600.0, gt=0, le=86400)
    # The fewest attempts in the window that can suspend an endpoint
    webhook_suspend_min_attempts: Positive = 20
    # The share of failed attempts (0-1] that suspends an endpoint
    webhook_suspend_failure_rate: float = Field(default=0.95, gt=0, le=1)
    # Client-subscribed events (SEP-3415, a draft; docs/guides/events.md): the most live webhook
    # subscriptions one principal may hold; 0 (the default): the events extension is not
    # offered, and tasks announce no events (e.g. 20 offers it, with authentication)
    events_max_subscriptions: NonNegative = 0
    # The lifetime granted to a subscription that suggests none, in seconds
    events_default_ttl_s: float = Field(default=3600.0, gt=0)
    # The longest lifetime granted (a longer suggestion, or none, is clamped to it), in seconds
    events_max_ttl_s: float = Field(default=86400.0, gt=0)
    # The shortest lifetime granted (a shorter suggestion is clamped up to it), in seconds
    events_min_ttl_s: float = Field(default=60.0, gt=0)
    # The most deliveries of one principal's events in flight at once; an event beyond it is
    # not delivered, and counted in its subscription's `deliveryStatus.droppedEvents`
    events_max_in_flight: Positive = 20
    # Allow event callbacks to loopback, private, link-local and other non-global addresses
    # (off: only globally routable ones, as the draft requires; on for a receiver on the same
    # host or network, and the tests). Callbacks are https either way
    events_allow_private_addresses: Flag = False
    # A PEM file of extra certificate authorities trusted for https callbacks (e.g. a
    # self-signed receiver's); None: the system's
    events_ca_file: str | None = None
    # Operations: the Temporal SDK's Prometheus exporter
    # (`worker_metrics_port`) and the SLIs. The `service_name` label on every Temporal SDK
    # metric, which tells this deployment's series from other teams' in a shared Prometheus.
    sdk_metrics_service_name: str = Field(default="mcp-tasks", min_length=1)
    # Temporal SDK counters end in `_total` (Prometheus practice; the alerts and dashboard
    # assume it).
    sdk_metrics_total_suffix: Flag = True
    # Temporal SDK durations in seconds with a `_seconds` suffix (otherwise milliseconds, no
    # suffix; the alerts and dashboard assume seconds).
    sdk_metrics_seconds: Flag = True
    # An input_required wait older than this counts in `mcp_tasks_input_waits_over_threshold`
    # (the SLI of answers that are late), in seconds.
    input_wait_threshold_s: float = Field(default=86400.0, gt=0)
    # A working task whose state has not changed for this long counts in
    # `mcp_tasks_stalled_tasks` (working with no progress), in seconds.
    stalled_after_s: float = Field(default=3600.0, gt=0)
    # An activity attempt beyond this number counts in `mcp_tasks_activity_retries_over_total`
    # (an activity that keeps failing and retrying), counted by the worker.
    activity_attempts_threshold: Positive = 5
    # How long a `/readyz` answer is reused (one Temporal health check per interval, shared by
    # every probe that arrives meanwhile), in seconds.
    ready_cache_s: float = Field(default=2.0, gt=0, le=60)
    # Log one successful read (tasks/get, tasks/list, tasks/result) request line in this many
    # (1: every one); errors and other methods are always logged; the line says `sampledOneIn`.
    log_reads_every: Positive = 1
    # The team's Temporal Web UI (`https://temporal.example.com`): `tasks show`, `tasks list`,
    # the inbox's task page link each task to its workflow there; its origin is the only one
    # the codec endpoint (`/codec`) answers cross-origin.
    temporal_ui_url: str | None = None
    # The scope a credential needs for the codec endpoint (`/codec/decode`, `/codec/encode`,
    # served with MCP_TASKS_PAYLOAD_KEY set): it reads every payload in the clear.
    codec_scope: str = Field(default="operator", min_length=1)

    # ----- quota (mcp_server/tasks/quota.py) ------------------------------------------------
    # How long a create waits for a worker to answer its quota reservation before it is
    # refused with a 503 and `Retry-After` (no task is started without a slot).
    quota_worker_wait_s: float = Field(default=10.0, gt=0, le=600)

    @field_validator("jwt_algorithms")
    @classmethod
    def _signed_only(cls, algorithms: tuple[str, ...]) -> tuple[str, ...]:
        if not algorithms:
            raise ValueError("needs at least one signing algorithm")
        if any(algorithm.lower() == "none" for algorithm in algorithms):
            raise ValueError("must never hold 'none' (it accepts unsigned tokens)")
        return algorithms

    @field_validator("approval_approvers")
    @classmethod
    def _approver_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        problem = invalid_approvers(list(names)) if names else None
        if problem is not None:
            raise ValueError(problem)
        return names

    @field_validator("public_url", "temporal_ui_url")
    @classmethod
    def _absolute_http_url(cls, url: str | None) -> str | None:
        parts = urlsplit(url or "")
        if url is not None and (parts.scheme not in {"http", "https"} or not parts.hostname):
            raise ValueError("must be an absolute http(s) URL, e.g. https://mcp.example.com")
        return url

    @field_validator("payload_key")
    @classmethod
    def _payload_keys(cls, keys: tuple[str, ...]) -> tuple[str, ...]:
        parse_keys(keys)
        return keys

    @field_validator("state_secret")
    @classmethod
    def _state_keys(cls, secret: str | None) -> str | None:
        # The same rule as protocol/frame/state_keys.py, checked here so that a bad value stops
        # the start.
        keys = [key.strip() for key in (secret or "").split(",") if key.strip()]
        if secret is not None and (not keys or any(len(key.encode()) < 16 for key in keys)):
            raise ValueError("each comma-separated key must be at least 16 characters")
        return secret

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """The settings of `env` (default: the process environment), then `overrides` (flags);
        an override of None is no override."""
        source = os.environ if env is None else env
        values: dict[str, Any] = {}
        origins: dict[str, str] = {}
        for name in cls.model_fields:
            variable = f"MCP_TASKS_{name.upper()}"
            raw = source.get(variable)
            if raw is not None:
                values[name], origins[name] = raw, variable
        for name, value in overrides.items():
            if value is not None:
                values[name] = value
                origins.pop(name, None)
        return cls._validated(values, origins)

    def with_(self, **changes: Any) -> Settings:
        """A copy with `changes`, validated like any other settings."""
        return self._validated({**self.model_dump(), **changes}, {})

    @classmethod
    def _validated(cls, values: dict[str, Any], origins: Mapping[str, str]) -> Settings:
        try:
            return cls.model_validate(values)
        except ValidationError as err:
            problems = []
            for error in err.errors():
                name = str(error["loc"][0])
                if error["type"] == "extra_forbidden":
                    problems.append(f"{name}: is not a setting")
                    continue
                where = origins.get(name, name)
                shown = "<hidden>" if name in _HIDDEN else repr(values[name])
                problems.append(f"{where}={shown}: {describe(error)}")
            raise ConfigError("; ".join(problems)) from None


def key_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as a TOML reader writes it: `steps[2].timeout_seconds`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else part
    return path


def describe(error: ErrorDetails) -> str:
    """The problem of one validation error, in a few words (`must be an integer`)."""
    kind, ctx = error["type"], error.get("ctx", {})
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known key"
    if kind == "value_error":
        return str(ctx["error"])
    if kind.startswith("int_"):
        return "must be an integer"
    if kind in {"float_type", "float_parsing"}:
        return "must be a number"
    if kind.startswith("string_type"):
        return "must be a string"
    if kind == "string_too_short":
        return "must not be empty"
    if kind.startswith("bool_"):
        return "must be a boolean"
    if kind in {"dict_type", "model_type", "model_attributes_type"}:
        return "must be a table"
    if kind in {"list_type", "tuple_type"}:
        return "must be a list"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}"
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "less_than_equal": ("at most", "le"),
        "greater_than": ("greater than", "gt"),
        "less_than": ("less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        bound = ctx[key]
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)  # "greater than 0", not "0.0"
        return f"must be {words} {bound}"
    message = error["msg"]
    return message[:1].lower() + message[1:]
