"""The attack on 2025-11-25 session ids (`Mcp-Session-Id`, mcp_server/http/sessions.py): the
same session spelled another way (padding, a different last character that decodes to the same
bytes, `+` for `-`) was accepted as a different id, so what is keyed on the id (the session a
task records, the questions its GET stream relays) could be split; and an id never expired.
Now only the canonical spelling opens a session, and an id lasts SESSION_LIFETIME_S."""

from __future__ import annotations

import base64

import mcp_types as core
import pytest

from mcp_server.http.sessions import SESSION_LIFETIME_S, Session, SessionIds
from mcp_tasks.signed_tokens import CLOCK_SKEW_S
from tests.asgi_stack import AsgiStack
from tests.client_2025 import Client2025

SECRET = b"a-state-secret-of-the-session-tests"
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def respellings(session_id: str) -> list[str]:
    """Other spellings of `session_id` that a lenient base64 decoder reads as the same bytes."""
    signed, signature = session_id.rsplit(".", 1)
    last = signature[-1]  # 32 bytes: the last character carries 4 bits and 2 unused ones
    same_bits = next(
        c for c in ALPHABET if c != last and ALPHABET.index(c) >> 2 == ALPHABET.index(last) >> 2
    )
    assert base64.urlsafe_b64decode(signature[:-1] + same_bits + "=") == base64.urlsafe_b64decode(
        signature + "="
    )
    spellings = [f"{signed}.{signature}=", f"{signed}.{signature[:-1]}{same_bits}"]
    if "-" in session_id:
        spellings.append(session_id.replace("-", "+", 1))
    return spellings


def session(principal: str = "alice") -> Session:
    return Session("2025-11-25", core.ClientCapabilities(), principal)


def test_only_the_canonical_spelling_of_a_session_id_opens_it() -> None:
    codec = SessionIds(SECRET)
    minted = codec.mint(session())
    assert codec.open(minted, "alice") is not None
    for other in respellings(minted):
        assert codec.open(other, "alice") is None, other


def test_a_session_id_expires_after_its_lifetime() -> None:
    now = [1_800_000_000.0]
    codec = SessionIds(SECRET, clock=lambda: now[0])
    minted = codec.mint(session())
    now[0] += SESSION_LIFETIME_S - 1
    assert codec.open(minted, "alice") is not None  # hours-long approvals fit
    now[0] += 2
    assert codec.open(minted, "alice") is None


def test_a_session_id_minted_by_a_clock_far_ahead_is_refused() -> None:
    ahead = SessionIds(SECRET, clock=lambda: 1_800_000_000.0 + CLOCK_SKEW_S + 60)
    minted = ahead.mint(session())
    assert SessionIds(SECRET, clock=lambda: 1_800_000_000.0).open(minted, "alice") is None


@pytest.mark.parametrize("which", [0, 1])
async def test_a_respelled_session_id_is_an_unknown_session_over_http(
    asgi_stack: AsgiStack, which: int
) -> None:
    client = Client2025(asgi_stack.http, asgi_stack.url)
    await client.initialize()
    assert client.session_id is not None
    assert (await client.request("tools/list")).status == 200
    client.session_id = respellings(client.session_id)[which]
    reply = await client.request("tools/list")
    assert reply.status == 404
