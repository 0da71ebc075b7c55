"""One Temporal client per process, and the namespace setup the server relies on."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.namespace.v1 import NamespaceConfig
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, UpdateNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, TLSConfig

from mcp_server.observability import tracing
from mcp_server.observability.sdk_metrics import sdk_metrics_runtime
from mcp_server.tasks.temporal_errors import TemporalCallMetrics
from mcp_server.temporal.codec import data_converter, header_codec_behavior
from mcp_tasks.settings import Settings
from workflows.task_state import SEARCH_ATTRIBUTE_TYPES, SEARCH_ATTRIBUTES

log = logging.getLogger("mcp_server.temporal")


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def _tls(settings: Settings) -> TLSConfig | bool:
    if not (settings.tls or settings.tls_cert_path or settings.tls_ca_path):
        return bool(settings.api_key)  # Temporal Cloud API keys need TLS
    return TLSConfig(
        client_cert=_read(settings.tls_cert_path),
        client_private_key=_read(settings.tls_key_path),
        server_root_ca_cert=_read(settings.tls_ca_path),
        domain=settings.tls_server_name,
    )


async def connect(settings: Settings) -> Client:
    """The process's Temporal client; with MCP_TASKS_PAYLOAD_KEY, its payloads are encrypted
    (temporal/codec.py), and so are those of every worker built on it."""
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.namespace,
        tls=_tls(settings),
        api_key=settings.api_key,
        data_converter=data_converter(settings.payload_key),
        header_codec_behavior=header_codec_behavior(settings.payload_key),
        **observed_connection(settings),
    )


def observed_connection(settings: Settings) -> dict[str, Any]:
    """Operations' part of a connection: the RPC-error counter, tracing when it is on, and the
    runtime that serves the Temporal SDK's Prometheus metrics when a port is set."""
    options: dict[str, Any] = {
        "interceptors": [TemporalCallMetrics(), *tracing.client_interceptors()]
    }
    runtime = sdk_metrics_runtime(settings)
    if runtime is not None:
        options["runtime"] = runtime
    return options


_INDEXED_TYPES = {
    "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    "KeywordList": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
    "Datetime": IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
}


async def ensure_search_attributes(client: Client) -> None:
    """Register the search attributes the tasks need (workflows/task_state.py,
    SEARCH_ATTRIBUTES) when missing; explain when we may not."""
    namespace = client.namespace
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    missing = [name for name in SEARCH_ATTRIBUTES if name not in listed.custom_attributes]
    if not missing:
        return
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=namespace,
                search_attributes={
                    name: _INDEXED_TYPES[SEARCH_ATTRIBUTE_TYPES[name]] for name in missing
                },
            )
        )
    except RPCError as err:
        commands = "; ".join(
            f"temporal operator search-attribute create --namespace {namespace} "
            f"--name {name} --type {SEARCH_ATTRIBUTE_TYPES[name]}"
            for name in missing
        )
        raise RuntimeError(
            f"Search attributes {missing} are not registered in namespace {namespace!r} and "
            f"could not be added ({err.message}). Register them once: {commands}"
        ) from err
    log.info("registered search attributes %s in namespace %s", missing, namespace)


async def retention(client: Client) -> timedelta:
    response = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace=client.namespace)
    )
    return response.config.workflow_execution_retention_ttl.ToTimedelta()


async def warn_if_retention_short(client: Client, longest_ttl_ms: int | None) -> None:
    """A closed task stays readable until its TTL only if retention is at least that long."""
    if longest_ttl_ms is None:
        return
    kept = await retention(client)
    if kept < timedelta(milliseconds=longest_ttl_ms):
        log.warning(
            "namespace %s keeps closed workflows for %s, less than the longest tool TTL (%s): "
            "completed tasks may vanish before their ttlMs. Raise it with: temporal operator "
            "namespace update --retention %dh %s",
            client.namespace,
            kept,
            timedelta(milliseconds=longest_ttl_ms),
            -(-longest_ttl_ms // 3_600_000),
            client.namespace,
        )


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
