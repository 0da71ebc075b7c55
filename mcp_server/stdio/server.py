"""`mcp-tasks stdio`: the services of the HTTP app, served to one host on stdin/stdout."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import BinaryIO

from temporalio.client import Client

from mcp_server.http.app import DEFAULT_INSTRUCTIONS, SERVER_INFO, state_secret
from mcp_server.http.auth import ANONYMOUS
from mcp_server.protocol.context import Services
from mcp_server.protocol.limits import Limits, PollLimiter
from mcp_server.protocol.request_state import RequestStateCodec
from mcp_server.runtime.config import Settings
from mcp_server.stdio.channel import StdioChannel
from mcp_server.stdio.connection import StdioConnection
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.registry import ToolRegistry


def build_services(settings: Settings, registry: ToolRegistry, client: Client) -> Services:
    clock = lambda: datetime.now(UTC)  # noqa: E731 (one clock for every part)
    limits = Limits(
        max_input_responses=settings.max_input_responses,
        max_input_response_bytes=settings.max_input_response_bytes,
        max_open_tasks_per_principal=settings.max_open_tasks_per_principal,
        polls=PollLimiter(settings.poll_rate_factor, settings.poll_burst),
    )
    return Services(
        registry=registry,
        store=TemporalTaskStore(client, settings.task_queue, clock),
        request_state=RequestStateCodec(state_secret(settings)),
        clock=clock,
        server_info=SERVER_INFO,
        limits=limits,
        instructions=settings.instructions or DEFAULT_INSTRUCTIONS,
        sync_wait_s=settings.sync_wait_s,
    )


class StdioServer:
    """Serves the host until stdin ends (`serve` returns) or `stop` is called."""

    def __init__(
        self,
        settings: Settings,
        registry: ToolRegistry,
        client: Client,
        reader: BinaryIO,
        writer: BinaryIO,
    ) -> None:
        self.channel = StdioChannel(reader, writer, settings.max_body_bytes)
        services = build_services(settings, registry, client)
        self.connection = StdioConnection(services, self.channel.send, ANONYMOUS.digest)

    async def serve(self) -> None:
        try:
            async for line in self.channel.lines():
                await self.connection.receive(line)
        finally:
            await self.connection.close()
            await self.channel.close()
