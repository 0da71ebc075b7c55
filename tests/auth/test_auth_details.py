"""Authentication details, each an attack that used to work: the challenge's metadata URL, an
ambiguous principal, an empty subject, two Authorization headers, a JWKS outage, library text
in error_description. Over real HTTP, with a real JWKS server where keys come from a URL."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mcp_server.auth.modes import build_authenticator
from mcp_server.runtime.devserver import free_port
from mcp_tasks.identity import Principal
from mcp_tasks.settings import Settings
from tests.asgi_stack import AsgiStack, AsgiStackFactory
from tests.conftest import StackFactory
from tests.jwks_server import JwksServer
from tests.mcp_client import McpClient
from tests.test_security import (  # noqa: F401 (fixtures)
    AUDIENCE,
    ISSUER,
    NOT_FOUND,
    _rsa,
    as_client,
    jwt_asgi_stack,
    mint,
    signing_key,
)


def challenge_params(challenge: str) -> dict[str, str]:
    assert challenge.startswith("Bearer ")
    params = {}
    for part in challenge[len("Bearer ") :].split('", '):
        key, _, value = part.partition("=")
        params[key] = value.strip('"')
    return params


async def test_the_challenge_names_the_metadata_where_rfc_9728_puts_it(
    jwt_asgi_stack: AsgiStack,  # noqa: F811
) -> None:
    reply = await as_client(jwt_asgi_stack, "not-a-jwt").rpc("tools/list")
    url = challenge_params(reply.headers["www-authenticate"])["resource_metadata"]
    assert url == "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"
    # ... which this server serves (the old URL, <audience>/.well-known/..., was a 404).
    served = await jwt_asgi_stack.http.get(jwt_asgi_stack.url.replace("/mcp", urlsplit(url).path))
    assert served.status_code == 200 and served.json()["resource"] == AUDIENCE


async def test_with_a_public_url_the_challenge_names_the_metadata_under_it(
    fresh_asgi_stack: AsgiStackFactory,
    signing_key: rsa.RSAPrivateKey,  # noqa: F811
    tmp_path: Any,
) -> None:
    public = tmp_path / "public.pem"
    public.write_text(_pem(signing_key))
    async with fresh_asgi_stack(
        auth="jwt",
        jwt_issuer=ISSUER,
        jwt_audience=AUDIENCE,
        jwt_public_key_path=str(public),
        public_url="https://public.example.test/",
    ) as stack:
        reply = await as_client(stack, mint(_rsa())).rpc("tools/list")
    url = challenge_params(reply.headers["www-authenticate"])["resource_metadata"]
    assert url == "https://public.example.test/.well-known/oauth-protected-resource/mcp"


def _pem(key: rsa.RSAPrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


async def test_a_subject_with_a_bar_is_not_another_subject_and_client(
    jwt_asgi_stack: AsgiStack,  # noqa: F811
    signing_key: rsa.RSAPrivateKey,  # noqa: F811
) -> None:
    # "alice|app" used to be read as sub=alice, client_id=app: the same principal.
    owner = as_client(jwt_asgi_stack, mint(signing_key, sub="alice", client_id="app"))
    task_id = await owner.create_task("slow_compute", {"seconds": 30})
    for claims in ({"sub": "alice|app"}, {"sub": '["alice","app"]'}, {"sub": "alice"}):
        intruder = as_client(jwt_asgi_stack, mint(signing_key, **claims))
        assert (await intruder.get_task(task_id)).error == NOT_FOUND, claims
    assert (await owner.get_task(task_id)).result["taskId"] == task_id
    await owner.cancel_task(task_id)
    # Without a client id the principal is what it always was: earlier tasks keep their owner.
    expected = hashlib.sha256(b"principal:alice").hexdigest()[:32]
    assert Principal("alice").digest == expected


@pytest.mark.parametrize("subject", ["", "   "])
async def test_an_empty_subject_is_401(
    jwt_asgi_stack: AsgiStack,  # noqa: F811
    signing_key: rsa.RSAPrivateKey,  # noqa: F811
    subject: str,
) -> None:
    reply = await as_client(jwt_asgi_stack, mint(signing_key, sub=subject)).rpc("tools/list")
    assert reply.status == 401
    assert challenge_params(reply.headers["www-authenticate"])["error"] == "invalid_token"


async def test_two_authorization_headers_are_400_whichever_comes_first(
    jwt_asgi_stack: AsgiStack,  # noqa: F811
    signing_key: rsa.RSAPrivateKey,  # noqa: F811
) -> None:
    good, bad = f"Bearer {mint(signing_key)}", "Bearer not-a-token"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for pair in ((good, bad), (bad, good), (good, good)):
        headers = [("Content-Type", "application/json")] + [("Authorization", v) for v in pair]
        response = await jwt_asgi_stack.http.post(jwt_asgi_stack.url, json=body, headers=headers)
        assert response.status_code == 400, pair
        assert "exactly one Authorization header" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("token", "phrase"),
    [
        ("other-key", "bad signature"),
        ("expired", "token expired"),
        ("audience", "wrong audience"),
        ("garbage", "malformed token"),
        ("no-exp", "missing claim exp"),
    ],
)
async def test_error_description_is_a_fixed_phrase_without_library_text(
    jwt_asgi_stack: AsgiStack,  # noqa: F811
    signing_key: rsa.RSAPrivateKey,  # noqa: F811
    token: str,
    phrase: str,
) -> None:
    tokens: dict[str, Callable[[], str]] = {
        "other-key": lambda: mint(_rsa()),
        "expired": lambda: mint(signing_key, exp=int(time.time()) - 600),
        "audience": lambda: mint(signing_key, aud="https://other.example.test/mcp"),
        "garbage": lambda: "abc.def.ghi",
        "no-exp": lambda: mint(signing_key, exp=None),
    }
    reply = await as_client(jwt_asgi_stack, tokens[token]()).rpc("tools/list")
    assert reply.status == 401
    assert challenge_params(reply.headers["www-authenticate"])["error_description"] == phrase
    assert reply.error["message"] == f"Unauthorized: {phrase}"


@pytest.fixture
def jwks() -> Iterator[tuple[JwksServer, rsa.RSAPrivateKey]]:
    """A JWKS endpoint the test can take down, and the key it publishes."""
    key = _rsa()
    endpoint = JwksServer(key, "k1")
    yield endpoint, key
    endpoint.stop()


async def test_a_jwks_outage_is_503_with_retry_after_and_known_keys_outlive_it(
    fresh_stack: StackFactory, jwks: tuple[JwksServer, rsa.RSAPrivateKey]
) -> None:
    endpoint, key = jwks
    settings = {
        "auth": "jwt",
        "jwt_issuer": ISSUER,
        "jwt_audience": AUDIENCE,
        "jwt_jwks_url": endpoint.url,
    }
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "carol", "exp": now + 120}
    token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
    async with fresh_stack(**settings) as stack:
        assert (await as_client(stack, token).rpc("tools/list")).status == 200
        endpoint.stop()
        # A blip: the key already fetched is kept.
        assert (await as_client(stack, token).rpc("tools/list")).status == 200
    # A replica that never saw the key, during the outage: the token may be valid, so not 401.
    async with fresh_stack(**settings) as stack:
        response = await _post(stack.http, stack.url, token)
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) > 0
    error = response.json()["error"]
    assert "cannot be fetched" in error["message"] and "127.0.0.1" not in error["message"]


async def _post(http: httpx.AsyncClient, url: str, token: str) -> httpx.Response:
    client = McpClient(http, url)
    headers = {**client.headers_for("tools/list", {}), "Authorization": f"Bearer {token}"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return await http.post(url, json=body, headers=headers)


def test_insecure_on_a_public_address_needs_allowed_hosts() -> None:
    # `--host 0.0.0.0 --insecure` accepted any Host header: DNS rebinding reached `deploy`.
    with pytest.raises(ValueError, match="MCP_TASKS_ALLOWED_HOSTS"):
        build_authenticator(Settings(host="0.0.0.0", insecure=True))
    build_authenticator(Settings(host="0.0.0.0", insecure=True, allowed_hosts=("mcp.lan",)))
    build_authenticator(Settings(host="127.0.0.1", insecure=True))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_TASKS_")}
    env |= {"MCP_TASKS_PORT": str(free_port()), "MCP_TASKS_TEMPORAL_ADDRESS": "127.0.0.1:1"}
    mcp_tasks = str(Path(sys.executable).parent / "mcp-tasks")
    done = subprocess.run(
        [mcp_tasks, "server", "--host", "0.0.0.0", "--insecure"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("mcp-tasks: refusing to serve 0.0.0.0 with --insecure")
    assert "MCP_TASKS_ALLOWED_HOSTS" in done.stderr and done.stderr.count("\n") == 1
