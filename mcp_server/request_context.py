"""What every method handler receives: the parsed request and the server's services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp_server.headers import HeaderSource
from mcp_server.limits import Limits
from mcp_server.request_state import RequestStateCodec
from mcp_server.task_store import TaskStore
from mcp_server.tool_registry import ToolRegistry


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
