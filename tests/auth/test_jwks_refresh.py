"""`--auth jwt` with keys from a JWKS URL, under the attack that was tried: unauthenticated
requests with random `kid` values while the authorization server is slow or dead. They used to
queue behind one lock and fill the thread pool, so a token whose key was already known waited
for them. Now a known key never waits on a refresh, and random `kid`s cost at most one fetch
per refresh interval (mcp_server/auth/jwks.py)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Iterator

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from mcp_server.auth import jwks as jwks_module
from mcp_server.auth.authenticators import AuthError
from mcp_server.auth.jwt_auth import JwtAuthentication
from mcp_tasks.settings import Settings
from tests.jwks_server import JwksServer
from tests.test_security import AUDIENCE, ISSUER, _rsa

ATTACKERS = 40  # more than the default thread pool of any machine this runs on


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return _rsa()


@pytest.fixture
def endpoint(key: rsa.RSAPrivateKey) -> Iterator[JwksServer]:
    server = JwksServer(key, "k1")
    yield server
    server.stop()


def authenticator(endpoint: JwksServer) -> JwtAuthentication:
    return JwtAuthentication(
        Settings(auth="jwt", jwt_issuer=ISSUER, jwt_audience=AUDIENCE, jwt_jwks_url=endpoint.url)
    )


def bearer(key: rsa.RSAPrivateKey, kid: str) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "carol", "exp": now + 120}
    return "Bearer " + jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


def random_kid_token() -> str:
    """What the attacker sends: any key of theirs, a `kid` nobody published."""
    return bearer(_attacker_key, secrets.token_hex(8))


_attacker_key = _rsa()


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):  # 10 s at most
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not within 10 s")


async def test_a_known_key_is_served_while_random_kids_wait_on_a_hung_jwks_endpoint(
    endpoint: JwksServer, key: rsa.RSAPrivateKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jwks_module, "REFRESH_INTERVAL_S", 0.0)  # every attacker may refresh
    monkeypatch.setattr(jwks_module, "JWKS_TIMEOUT_S", 60.0)  # the refresh stays pending
    auth = authenticator(endpoint)
    known = bearer(key, "k1")
    assert (await auth.authenticate(known)).subject == "carol"
    endpoint.answer.clear()  # the authorization server hangs from now on
    attacks = [asyncio.create_task(auth.authenticate(random_kid_token())) for _ in range(ATTACKERS)]
    await until(lambda: endpoint.requests == 2)  # the refresh reached the endpoint
    async with asyncio.timeout(10):
        principal = await auth.authenticate(known)
    assert principal.subject == "carol"
    assert not any(attack.done() for attack in attacks)  # the refresh is still pending
    endpoint.answer.set()
    refusals = await asyncio.gather(*attacks, return_exceptions=True)
    assert all(isinstance(r, AuthError) and r.status == 401 for r in refusals), refusals
    assert {r.description for r in refusals if isinstance(r, AuthError)} == {"unknown signing key"}
    assert endpoint.requests == 2  # the attackers shared one fetch


async def test_random_kids_cost_the_authorization_server_one_fetch(
    endpoint: JwksServer,
) -> None:
    auth = authenticator(endpoint)
    for _ in range(2):  # a burst, then another within the refresh interval
        refusals = await asyncio.gather(
            *(auth.authenticate(random_kid_token()) for _ in range(ATTACKERS)),
            return_exceptions=True,
        )
        assert all(isinstance(r, AuthError) and r.status == 401 for r in refusals), refusals
    assert endpoint.requests == 1


async def test_a_dead_jwks_endpoint_is_503_with_retry_after_never_401(
    endpoint: JwksServer, key: rsa.RSAPrivateKey
) -> None:
    auth = authenticator(endpoint)
    endpoint.stop()
    for _ in range(3):
        with pytest.raises(AuthError) as refused:
            await auth.authenticate(bearer(key, "k1"))
        assert refused.value.status == 503 and refused.value.retry_after_s


async def test_a_token_without_a_kid_is_refused_without_a_fetch(
    endpoint: JwksServer, key: rsa.RSAPrivateKey
) -> None:
    auth = authenticator(endpoint)
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "carol", "exp": now + 120}
    with pytest.raises(AuthError) as refused:
        await auth.authenticate("Bearer " + jwt.encode(claims, key, algorithm="RS256"))
    assert refused.value.status == 401 and refused.value.description == "unknown signing key"
    assert endpoint.requests == 0
