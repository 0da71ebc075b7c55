"""The one signed-token helper (mcp_tasks/signed_tokens.py) and the overlap with the formats
before it (mcp_tasks/legacy_tokens.py): each kind is its own salt, lasts its max_age, is read
only as written, and a token of each kind issued in the old format still works.

The OLD_* strings were made by the code before signed_tokens.py (`RequestStateCodec.encode`,
`SessionIds.mint`, the inbox's `SessionCookies.encode` and `CsrfTokens.token`) under
OLD_SECRET; delete them with legacy_tokens.py.
"""

from __future__ import annotations

import mcp_types as core
import pytest

from mcp_server.http.sessions import Session, SessionIds
from mcp_server.inbox.csrf import CsrfTokens
from mcp_server.inbox.session import InboxSession, SessionCookies
from mcp_server.protocol.frame.errors import INVALID_PARAMS, McpError
from mcp_server.protocol.frame.request_state import PendingRound, RequestStateCodec
from mcp_tasks.identity import Principal
from mcp_tasks.signed_tokens import (
    CLOCK_SKEW_S,
    ExpiredToken,
    ForgedToken,
    MalformedToken,
    Signatures,
    SignedTokens,
)

KEY, OTHER = b"k" * 32, b"o" * 32
ALICE = Principal("alice", frozenset({"deploy"}))
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

OLD_SECRET = b"an-old-state-secret-of-the-token-tests"
# Signed at 1_800_000_000 (expires 900 s later), for task-1 with one refused answer.
OLD_REQUEST_STATE = (
    "eyJtIjoidG9vbHMvY2FsbCIsInQiOiJkZXBsb3kiLCJhIjoiZGlnZXN0IiwicCI6ImFsaWNlIiwiciI6eyJjb25maXJt"
    "Ijp7ImFjdGlvbiI6ImFjY2VwdCJ9fSwiZXhwIjoxODAwMDAwOTAwMDAwLCJrIjoidGFzay0xIiwibiI6MX0"
    ".F9CcYFlRQWyMrqDPzwFU0j1hxyKV2Lu6Uv6Pex7LLgs"
)
# Minted at 1_800_000_000 for alice, at 2025-11-25, with no capabilities.
OLD_SESSION_ID = (
    "eyJ2IjoiMjAyNS0xMS0yNSIsImMiOnt9LCJwIjoiYWxpY2UiLCJ0IjoxODAwMDAwMDAwLCJuIjoiYTc3Zjk2ODhkNDZj"
    "MmJkYyJ9.08Bt8wnZYOnrt-OR0FUgL2cMuSDxQ92ka0Is8gBHVT8"
)
# Alice's sign-in "the-session-id" under the binding "tokens:abc", until 2100.
OLD_COOKIE = (
    "eyJpZCI6InRoZS1zZXNzaW9uLWlkIiwiZXhwIjo0MTAyNDQ0ODAwLCJwIjp7InMiOiJhbGljZSIsInNjIjpbImRlcGxv"
    "eSJdLCJjIjpudWxsLCJlIjpmYWxzZX0sImsiOiJmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZm"
    "ZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmIn0.FBFA1oVaN7KK__Hr5nbGnWa5gg99RNJzDZ9VFx2kZq0"
)
# The CSRF token of the session "the-session-id".
OLD_CSRF = "47dd6f9205c12b527a833f69ac99ce0c212486587f1c7a250b86cd11bd82345c"


def clock(start: float = 1_800_000_000.0) -> tuple[list[float], SignedTokens]:
    now = [start]
    return now, SignedTokens([KEY], "test", max_age_s=60, clock=lambda: now[0])


def test_a_token_round_trips_and_lasts_its_max_age() -> None:
    now, tokens = clock()
    token = tokens.dumps({"a": [1, "é"]})
    now[0] += 60
    assert tokens.loads(token) == {"a": [1, "é"]}
    now[0] += 1
    with pytest.raises(ExpiredToken):
        tokens.loads(token)


def test_a_token_from_a_clock_ahead_is_read_within_the_skew_only() -> None:
    ahead = SignedTokens([KEY], "test", max_age_s=60, clock=lambda: 1_800_000_000.0)
    token = ahead.dumps("x")
    _, within = clock(1_800_000_000.0 - CLOCK_SKEW_S)
    assert within.loads(token) == "x"
    _, beyond = clock(1_800_000_000.0 - CLOCK_SKEW_S - 1)
    with pytest.raises(ExpiredToken):
        beyond.loads(token)


def test_the_newest_key_signs_and_every_key_verifies() -> None:
    rotating = SignedTokens([KEY, OTHER], "test", max_age_s=60)
    token = rotating.dumps(1)
    assert SignedTokens([KEY], "test", max_age_s=60).loads(token) == 1
    with pytest.raises(ForgedToken):
        SignedTokens([OTHER], "test", max_age_s=60).loads(token)
    assert rotating.loads(SignedTokens([OTHER], "test", max_age_s=60).dumps(2)) == 2


def test_a_token_of_one_purpose_is_no_token_of_another() -> None:
    token = SignedTokens([KEY], "one", max_age_s=60).dumps(1)
    with pytest.raises(ForgedToken):
        SignedTokens([KEY], "two", max_age_s=60).loads(token)
    session_id = SessionIds(KEY).mint(Session("2025-11-25", core.ClientCapabilities(), "p"))
    with pytest.raises(McpError):
        RequestStateCodec(KEY).decode(session_id)
    assert SessionCookies(KEY, 3600).decode(session_id) is None


def test_only_the_spelling_the_helper_wrote_is_read() -> None:
    _, tokens = clock()
    token = tokens.dumps({"a": 1})
    signed, signature = token.rsplit(".", 1)
    # The last of 43 characters carries 4 bits of the signature and 2 unused ones.
    same_bytes = signature[:-1] + ALPHABET[ALPHABET.index(signature[-1]) ^ 1]
    others = [
        f"{token}=",
        f"{signed}.{same_bytes}",
        f"{signed}.{signature[:-1]}!{signature[-1]}",
        token.replace("-", "+").replace("_", "/"),
        f" {token}",
        f"{token}.x",
    ]
    for other in others:
        if other != token:
            with pytest.raises(MalformedToken):
                tokens.loads(other)


def test_signatures_are_canonical_hex_under_their_purpose() -> None:
    signatures = Signatures([KEY], "test")
    signature = signatures.sign("value")
    assert len(signature) == 64 and signatures.valid("value", signature)
    assert not signatures.valid("value", signature.upper())
    assert not signatures.valid("value", f" {signature}")
    assert not signatures.valid("other", signature)
    assert not Signatures([KEY], "another").valid("value", signature)
    assert Signatures([OTHER, KEY], "test").valid("value", signature)


def test_a_request_state_of_the_old_format_is_read_until_it_expires() -> None:
    now = [1_800_000_000.0 + 899]
    codec = RequestStateCodec(OLD_SECRET, clock=lambda: now[0])
    assert codec.decode(OLD_REQUEST_STATE) == PendingRound(
        "deploy", "digest", "alice", {"confirm": {"action": "accept"}}, "task-1", 1
    )
    assert codec.encode(codec.decode(OLD_REQUEST_STATE)).count(".") >= 2  # issued anew
    for forged in (OLD_REQUEST_STATE[:-1] + "A", OLD_REQUEST_STATE + "="):
        with pytest.raises(McpError) as refused:
            codec.decode(forged)
        assert refused.value.code == INVALID_PARAMS
    now[0] += 2
    with pytest.raises(McpError) as expired:
        codec.decode(OLD_REQUEST_STATE)
    assert expired.value.code == INVALID_PARAMS and "expired" in expired.value.message


def test_a_session_id_of_the_old_format_opens_its_session_until_it_expires() -> None:
    now = [1_800_000_000.0 + 3600]
    codec = SessionIds(OLD_SECRET, clock=lambda: now[0])
    assert codec.open(OLD_SESSION_ID, "alice") == Session(
        "2025-11-25", core.ClientCapabilities(), "alice"
    )
    assert codec.open(OLD_SESSION_ID, "bob") is None
    assert codec.open(OLD_SESSION_ID + "=", "alice") is None
    assert SessionIds(KEY, clock=lambda: now[0]).open(OLD_SESSION_ID, "alice") is None
    now[0] += 24 * 3600
    assert codec.open(OLD_SESSION_ID, "alice") is None


def test_an_inbox_cookie_and_csrf_token_of_the_old_format_still_sign_in() -> None:
    cookies = SessionCookies(OLD_SECRET, 3600, "tokens:abc")
    session = cookies.decode(OLD_COOKIE)
    assert session == InboxSession("the-session-id", 4_102_444_800, ALICE, "f" * 64)
    assert SessionCookies(OLD_SECRET, 3600, "tokens:other").decode(OLD_COOKIE) is None
    assert cookies.decode(OLD_COOKIE[:-1] + "A") is None
    csrf = CsrfTokens(OLD_SECRET)
    assert csrf.valid(session, OLD_CSRF)
    assert not csrf.valid(session, OLD_CSRF.upper())
    assert not csrf.valid(InboxSession("another", 4_102_444_800), OLD_CSRF)
    assert csrf.token(session) != OLD_CSRF and csrf.valid(session, csrf.token(session))
