"""One Temporal client per process (what a namespace must hold: temporal/setup.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from google.protobuf.duration_pb2 import Duration
from temporalio.api.namespace.v1 import NamespaceConfig
from temporalio.api.workflowservice.v1 import UpdateNamespaceRequest
from temporalio.client import Client
from temporalio.service import TLSConfig

from mcp_server.observability import tracing
from mcp_server.observability.sdk_metrics import sdk_runtime
from mcp_server.tasks.temporal_errors import TemporalCallMetrics
from mcp_server.temporal.codec import data_converter, header_codec_behavior
from mcp_server.temporal.setup import retention, unreachable
from mcp_tasks.settings import Settings


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def _tls(settings: Settings) -> TLSConfig | bool:
    if not (settings.tls or settings.tls_cert_path or settings.tls_ca_path):
        return bool(settings.api_key)  # Temporal Cloud API keys need TLS
    return TLSConfig(
        client_cert=_read(settings.tls_cert_path),
        client_private_key=_read(settings.tls_key_path),
        server_root_ca_cert=_read(settings.tls_ca_path),
        domain=settings.tls_server_name or None,  # (empty: as compose passes an unset one)
    )


async def connect(settings: Settings) -> Client:
    """The process's Temporal client; with MCP_TASKS_PAYLOAD_KEY, its payloads are encrypted
    (temporal/codec.py), and so are those of every worker built on it. A cluster it cannot
    reach is one line (ClusterProblem, temporal/setup.py)."""
    try:
        return await _connect(settings)
    except RuntimeError as err:
        raise unreachable(settings.temporal_address, err) from err


async def _connect(settings: Settings) -> Client:
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.namespace,
        tls=_tls(settings),
        api_key=settings.api_key or None,
        data_converter=data_converter(settings.payload_key),
        header_codec_behavior=header_codec_behavior(settings.payload_key),
        **observed_connection(settings),
    )


def observed_connection(settings: Settings) -> dict[str, Any]:
    """Operations' part of a connection: the RPC-error counter, tracing when it is on, and the
    runtime (sdk_metrics.py) that forwards the SDK core's logs to the process's formatter and
    serves the SDK's Prometheus metrics when a port is set."""
    return {
        "interceptors": [TemporalCallMetrics(), *tracing.client_interceptors()],
        "runtime": sdk_runtime(settings),
    }


async def set_retention(client: Client, keep: timedelta) -> None:
    """Dev mode only: keep closed workflows for `keep` (the dev server's minimum is 1 h)."""
    keep = max(keep, timedelta(hours=1))
    if await retention(client) == keep:
        return
    await client.workflow_service.update_namespace(
        UpdateNamespaceRequest(
            namespace=client.namespace,
            config=NamespaceConfig(
                workflow_execution_retention_ttl=Duration(seconds=int(keep.total_seconds()))
            ),
        )
    )
