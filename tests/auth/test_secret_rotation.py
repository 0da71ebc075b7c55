"""Rotating secrets keeps what was signed or encrypted before.

`MCP_TASKS_STATE_SECRET` is a list (mcp_server/protocol/frame/state_keys.py): the first key signs,
any listed verifies, so a 2025-11-25 session, an MRTR requestState, an inbox sign-in and its
CSRF token made under the old key still work once the new key is first. The payload codec
(`MCP_TASKS_PAYLOAD_KEY`, temporal/codec.py) overlaps the same way, each payload naming its key
id in its metadata. The session test runs the whole app in-process (tests/asgi_stack.py): a
session is an HTTP header the transport checks, not just a codec call.
"""

from __future__ import annotations

import base64

import pytest
from temporalio.api.common.v1 import Payload

from mcp_server.inbox.csrf import CsrfTokens
from mcp_server.inbox.session import SessionCookies
from mcp_server.protocol.frame.errors import INVALID_PARAMS, McpError
from mcp_server.protocol.frame.request_state import PendingRound, RequestStateCodec
from mcp_server.protocol.services import state_secret
from mcp_server.temporal.codec import KEY_ID, EncryptionCodec, PayloadKeyError, key_id
from mcp_tasks.identity import Principal
from mcp_tasks.settings import ConfigError, Settings
from tests.asgi_stack import AsgiStackFactory
from tests.client_2025 import Client2025

OLD = "old-state-secret-" + "o" * 24
NEW = "new-state-secret-" + "n" * 24
ROTATING = f"{NEW},{OLD}"
ALICE = Principal("alice", frozenset({"deploy"}))


def keys(value: str) -> tuple[bytes, ...]:
    return state_secret(Settings(state_secret=value))


async def test_a_2025_11_25_session_survives_a_rotation_of_the_state_secret(
    fresh_asgi_stack: AsgiStackFactory,
) -> None:
    async with fresh_asgi_stack(state_secret=OLD) as before:
        client = Client2025(before.http, before.url)
        await client.initialize()
        minted = client.session_id
    assert minted is not None
    async with fresh_asgi_stack(state_secret=ROTATING) as during:
        client = Client2025(during.http, during.url)
        client.session_id = minted
        assert (await client.request("tools/list")).status == 200
        await client.initialize()  # a new session is minted with the new key ...
        fresh = client.session_id
    async with fresh_asgi_stack(state_secret=NEW) as after:
        client = Client2025(after.http, after.url)
        client.session_id = fresh
        assert (await client.request("tools/list")).status == 200  # ... so it outlives OLD
        client.session_id = minted
        assert (await client.request("tools/list")).status == 404  # OLD removed: it ends


def test_request_state_signed_before_a_rotation_is_read_after_it() -> None:
    pending = PendingRound("deploy", "digest", "owner", {"confirm": {"action": "accept"}})
    old_token = RequestStateCodec(keys(OLD)).encode(pending)
    rotating = RequestStateCodec(keys(ROTATING))
    assert rotating.decode(old_token) == pending
    new_token = rotating.encode(pending)
    assert RequestStateCodec(keys(NEW)).decode(new_token) == pending  # signed with the first
    with pytest.raises(McpError) as refused:
        RequestStateCodec(keys(OLD)).decode(new_token)
    assert refused.value.code == INVALID_PARAMS


def test_an_inbox_sign_in_and_its_form_token_survive_a_rotation() -> None:
    before = SessionCookies(keys(OLD), 3600)
    session = before.new(ALICE)
    cookie, token = before.encode(session), CsrfTokens(keys(OLD)).token(session)
    during = SessionCookies(keys(ROTATING), 3600)
    assert during.decode(cookie) == session
    assert CsrfTokens(keys(ROTATING)).valid(session, token)
    assert SessionCookies(keys(NEW), 3600).decode(cookie) is None
    assert not CsrfTokens(keys(NEW)).valid(session, token)
    assert SessionCookies(keys(NEW), 3600).decode(during.encode(session)) == session


def test_a_short_state_secret_key_is_refused_naming_the_variable_never_the_value() -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"MCP_TASKS_STATE_SECRET": f"{NEW},tooshort"})
    message = str(refused.value)
    assert "MCP_TASKS_STATE_SECRET" in message and "16 characters" in message
    assert "tooshort" not in message and NEW not in message
    assert NEW not in repr(Settings(state_secret=ROTATING))
    assert keys(f" {NEW} , {OLD} ,") == (NEW.encode(), OLD.encode())


def payload_key(fill: int) -> str:
    return base64.b64encode(bytes([fill]) * 32).decode()


async def test_a_payload_encrypted_before_a_key_rotation_decrypts_after_it() -> None:
    old, new = payload_key(1), payload_key(2)
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'{"answer": 42}')
    [sealed_old] = await EncryptionCodec([base64.b64decode(old)]).encode([plain])
    rotating = EncryptionCodec([base64.b64decode(new), base64.b64decode(old)])
    assert await rotating.decode([sealed_old]) == [plain]
    [sealed_new] = await rotating.encode([plain])
    assert sealed_new.metadata[KEY_ID].decode() == key_id(base64.b64decode(new))
    assert sealed_old.metadata[KEY_ID].decode() == key_id(base64.b64decode(old))
    with pytest.raises(PayloadKeyError) as missing:
        await EncryptionCodec([base64.b64decode(new)]).decode([sealed_old])
    assert key_id(base64.b64decode(old)) in str(missing.value)
    assert old not in str(missing.value)
