"""What a namespace must hold before the server or a worker uses it, checked and set up.

`mcp-tasks setup` (runtime/setup_command.py) registers what is missing and says what it changed;
`mcp-tasks server` and `mcp-tasks worker` only check (`require_ready`: two cheap RPCs) and
refuse to start, naming `mcp-tasks setup`, when something is missing. Only `mcp-tasks dev`
(and `stdio --dev`) registers at start, on its own embedded dev server.
"""

from __future__ import annotations

import logging
import re
import shlex
from dataclasses import dataclass
from datetime import timedelta

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks.contracts.task_state import SEARCH_ATTRIBUTE_TYPES, SEARCH_ATTRIBUTES

log = logging.getLogger("mcp_server.temporal")

# Exit codes of `mcp-tasks setup` (and of `server`/`worker` refusing to start), one per cause.
EXIT_UNREACHABLE = 3
EXIT_NO_NAMESPACE = 4
EXIT_DENIED = 5
EXIT_NOT_SET_UP = 6

_INDEXED_TYPES = {
    "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    "KeywordList": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
    "Datetime": IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
}
_DENIED = (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNAUTHENTICATED)
_UNREACHABLE = (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED)


class ClusterProblem(RuntimeError):
    """Why the cluster cannot be used as it is, in one line, with the exit code that says so."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def unreachable(address: str, err: BaseException) -> ClusterProblem:
    """A failed connect (refused, TLS, DNS) as one line: the innermost message the SDK gives
    (e.g. `Connection refused`), else all of it."""
    reason = str(err).removeprefix("Failed client connect: ")
    innermost = re.findall(r'(?:message|error): "([^"]+)"', reason)
    return ClusterProblem(
        f"cannot reach Temporal at {address}: {innermost[-1] if innermost else reason}",
        EXIT_UNREACHABLE,
    )


def create_command(client: Client, needed: timedelta | None) -> str:
    """The `temporal` command that creates the client's namespace with the retention setup
    asks for (the longest tool TTL plus its grace; Temporal's default when no tool has one)."""
    retention = f" --retention {hours(needed)}" if needed is not None else ""
    namespace = shlex.quote(client.namespace)
    address = shlex.quote(client.service_client.config.target_host)
    return (
        f"temporal operator namespace create --namespace {namespace}{retention} --address {address}"
    )


def _problem(
    err: RPCError, client: Client, doing: str, needed: timedelta | None = None
) -> ClusterProblem:
    namespace = client.namespace
    if err.status == RPCStatusCode.NOT_FOUND:
        return ClusterProblem(
            f"namespace {namespace!r} does not exist: create it ({create_command(client, needed)})"
            " or set MCP_TASKS_NAMESPACE",
            EXIT_NO_NAMESPACE,
        )
    if err.status in _DENIED:
        return ClusterProblem(
            f"permission denied to {doing} in namespace {namespace!r}: {err.message}",
            EXIT_DENIED,
        )
    if err.status in _UNREACHABLE:
        return ClusterProblem(f"Temporal did not answer ({err.message})", EXIT_UNREACHABLE)
    return ClusterProblem(f"could not {doing} in namespace {namespace!r}: {err.message}", 1)


async def retention(client: Client, needed: timedelta | None = None) -> timedelta:
    """How long the namespace keeps closed workflows (ClusterProblem: it does not exist...;
    `needed`, the retention the tools need, goes into the command that creates it)."""
    try:
        response = await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=client.namespace)
        )
    except RPCError as err:
        raise _problem(err, client, "describe the namespace", needed) from err
    return response.config.workflow_execution_retention_ttl.ToTimedelta()


async def missing_search_attributes(client: Client, needed: timedelta | None = None) -> list[str]:
    """The search attributes of SEARCH_ATTRIBUTES not registered in the namespace."""
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError as err:
        raise _problem(err, client, "list the search attributes", needed) from err
    return [name for name in SEARCH_ATTRIBUTES if name not in listed.custom_attributes]


def register_commands(namespace: str, names: list[str]) -> str:
    """The `temporal` CLI commands that register `names` by hand."""
    return "; ".join(
        f"temporal operator search-attribute create --namespace {shlex.quote(namespace)} "
        f"--name {name} --type {SEARCH_ATTRIBUTE_TYPES[name]}"
        for name in names
    )


async def register_missing(client: Client, needed: timedelta | None = None) -> list[str]:
    """Register the missing search attributes; the names registered (none: nothing to do).
    `needed`: the retention the tools need, for the command that creates a missing namespace."""
    missing = await missing_search_attributes(client, needed)
    if not missing:
        return []
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=client.namespace,
                search_attributes={
                    name: _INDEXED_TYPES[SEARCH_ATTRIBUTE_TYPES[name]] for name in missing
                },
            )
        )
    except RPCError as err:
        problem = _problem(err, client, "register search attributes")
        if err.status in (*_DENIED, RPCStatusCode.UNIMPLEMENTED):
            problem = ClusterProblem(
                f"{problem} (register them with an admin's credentials: "
                f"{register_commands(client.namespace, missing)}; on Temporal Cloud: tcld "
                f"namespace search-attributes add)",
                EXIT_DENIED,
            )
        raise problem from err
    log.debug("registered search attributes %s in namespace %s", missing, client.namespace)
    return missing


@dataclass(frozen=True)
class RetentionCheck:
    """The namespace's retention against what the tools' longest TTL needs (None: no TTL)."""

    kept: timedelta
    needed: timedelta | None

    @property
    def short(self) -> bool:
        return self.needed is not None and self.kept < self.needed


async def check_retention(client: Client, longest_ttl_ms: int | None) -> RetentionCheck:
    needed = None if longest_ttl_ms is None else timedelta(milliseconds=longest_ttl_ms)
    return RetentionCheck(await retention(client, needed), needed)


def hours(span: timedelta) -> str:
    """A span as `temporal operator namespace update --retention` takes it, rounded up."""
    return f"{-(-int(span.total_seconds()) // 3600)}h"


def retention_warning(namespace: str, check: RetentionCheck) -> str:
    return (
        f"namespace {namespace} keeps closed workflows for {hours(check.kept)}, less than the "
        f"{hours(check.needed or check.kept)} the longest tool TTL needs (the TTL plus its grace "
        f"after closing): completed tasks may vanish before their ttlMs. Raise it with: "
        f"temporal operator namespace update --retention {hours(check.needed or check.kept)} "
        f"--namespace {shlex.quote(namespace)}"
    )


async def require_ready(client: Client, longest_ttl_ms: int | None) -> None:
    """At the start of a server or worker: the namespace exists (its retention is checked,
    a warning if short) and every search attribute is registered; else ClusterProblem. Credentials
    not allowed to list the search attributes only get a warning (nothing is known missing)."""
    needed = None if longest_ttl_ms is None else timedelta(milliseconds=longest_ttl_ms)
    try:
        missing = await missing_search_attributes(client, needed)  # (no namespace: NOT_FOUND)
    except ClusterProblem as problem:
        if problem.exit_code != EXIT_DENIED:
            raise
        # A worker's or server's credentials may write workflows but not list the namespace's
        # search attributes (an authorizer that keeps the operator API for admins): that says
        # nothing of whether they are there, so the start goes on, and a missing one fails the
        # first create, naming it.
        log.warning(
            "could not check the search attributes (%s); assuming `mcp-tasks setup` ran", problem
        )
        missing = []
    if missing:
        raise ClusterProblem(
            f"namespace {client.namespace!r} lacks the search attributes {', '.join(missing)}: "
            f"run `mcp-tasks setup` with the same settings once, then start again",
            EXIT_NOT_SET_UP,
        )
    check = await check_retention(client, longest_ttl_ms)
    if check.short:
        log.warning("%s", retention_warning(client.namespace, check))
