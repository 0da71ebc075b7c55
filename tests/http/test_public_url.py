"""MCP_TASKS_PUBLIC_URL decides the Host and Origin a server on a public address answers:
behind a TLS proxy (deploy/production, deploy/k8s) it is the only name the server serves."""

from __future__ import annotations

import pytest

from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import ConfigError, Settings
from tests.asgi_stack import asgi_running
from tests.http.test_transport import META, raw_post

PUBLIC = {"host": "0.0.0.0", "insecure": True, "public_url": "https://MCP.example.com/"}
DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}


def discover_headers(**extra: str) -> dict[str, str]:
    return {"Mcp-Method": "server/discover", **extra}


async def status_of(registry: ToolRegistry, headers: dict[str, str], **settings: object) -> int:
    async with asgi_running(registry, **{**PUBLIC, **settings}) as stack:
        response = await raw_post(stack, DISCOVER, headers)
        status: int = response.status_code
        return status


async def test_a_request_to_the_public_host_is_served(registry: ToolRegistry) -> None:
    headers = discover_headers(Host="mcp.example.com", Origin="https://mcp.example.com")
    assert await status_of(registry, headers) == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil.example.com"},
        {"Host": "10.0.0.7:8000"},
        {"Host": "mcp.example.com", "Origin": "https://evil.example.com"},
    ],
    ids=["foreign-host", "pod-ip", "foreign-origin"],
)
async def test_any_other_host_or_origin_gets_403(
    registry: ToolRegistry, headers: dict[str, str]
) -> None:
    assert await status_of(registry, discover_headers(**headers)) == 403


async def test_allowed_hosts_add_to_the_public_host(registry: ToolRegistry) -> None:
    headers = discover_headers(Host="mcp.internal")
    assert await status_of(registry, headers, allowed_hosts=("mcp.internal",)) == 200


@pytest.mark.parametrize("url", ["mcp.example.com", "ftp://mcp.example.com", "https://"])
def test_a_public_url_that_is_not_an_absolute_http_url_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match=r"MCP_TASKS_PUBLIC_URL=.*must be an absolute http"):
        Settings.from_env({"MCP_TASKS_PUBLIC_URL": url})
