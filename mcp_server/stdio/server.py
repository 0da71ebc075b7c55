"""`mcp-tasks stdio`: the services of the HTTP app, served to one host on stdin/stdout."""

from __future__ import annotations

from typing import BinaryIO

from temporalio.client import Client

from mcp_server.protocol.services import build_services, clock, state_secret
from mcp_server.stdio.channel import StdioChannel
from mcp_server.stdio.connection import StdioConnection
from mcp_server.tasks.store import TemporalTaskStore
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.identity import ANONYMOUS
from mcp_tasks.logging import use_principal_key
from mcp_tasks.settings import Settings


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
        store = TemporalTaskStore(
            client,
            settings.task_queue,
            clock,
            settings.poll_interval_max_ms,
            quota_lazy_release=settings.quota_lazy_release,
            quota_wait_s=settings.quota_worker_wait_s,
        )
        secret = state_secret(settings)
        use_principal_key(secret)  # the key of the principals the logs show
        services = build_services(settings, registry, store, secret)
        self.connection = StdioConnection(services, self.channel.send, ANONYMOUS.digest)

    async def serve(self) -> None:
        try:
            async for line in self.channel.lines():
                await self.connection.receive(line)
        finally:
            await self.connection.close()
            await self.channel.close()
