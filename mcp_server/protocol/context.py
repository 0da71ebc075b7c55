"""What every method handler receives: the parsed request and the server's services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp_server.http.headers import HeaderSource
from mcp_server.protocol.limits import Limits
from mcp_server.protocol.request_state import RequestStateCodec
from mcp_server.tasks.store import TaskStore
from mcp_server.tools.registry import ToolRegistry


@dataclass(frozen=True)
class Services:
    registry: ToolRegistry
    store: TaskStore
    request_state: RequestStateCodec
    clock: Callable[[], datetime]
    server_info: dict[str, Any]
    limits: Limits
    instructions: str | None = None


@dataclass(frozen=True)
class RequestContext:
    request_id: str | int
    method: str
    params: dict[str, Any]
    capabilities: dict[str, Any]
    # A digest of the authenticated principal; tasks are bound to it.
    principal: str
    headers: HeaderSource
