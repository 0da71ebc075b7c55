"""Inbox sessions are only as good as what issued them: a cookie from another authentication
configuration signs nobody in, a revoked token's session ends at once, and no credential can
be the local user."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mcp_server.auth.authenticators import AuthError, TokenAuthentication
from mcp_server.runtime.tokens import add_token, list_tokens, revoke_tokens
from mcp_tasks.settings import Settings
from tests.conftest import Stack, StackFactory
from tests.mcp_client import McpClient
from tests.test_security import AUDIENCE, ISSUER, _rsa, mint

APPROVE = {"key": "decision", "action": "choose:approve"}
QUESTION = {"message": "Rotate the payments key?", "approvers": ["release-manager"]}


def _base(stack: Stack) -> str:
    return stack.url.removesuffix("/mcp")


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found is not None, page
    return found.group(1)


def _as(stack: Stack, token: str) -> McpClient:
    client = McpClient(stack.http, stack.url)
    client.extra_headers = {"Authorization": f"Bearer {token}"}
    return client


async def _status(client: McpClient, task_id: str) -> str:
    reply = await client.get_task(task_id)
    status: str = reply.result["status"]
    return status


async def _local_user_cookie(stack: Stack) -> tuple[str, str]:
    """What a visitor of an `--auth none` inbox keeps: its cookie, and the CSRF token a task
    page gave it."""
    task_id = await stack.mcp.create_task("request_approval", {"message": "Anything?"})
    await stack.mcp.wait_status(task_id, "input_required", within=15)
    async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
        page = await http.get(f"/inbox/tasks/{task_id}")
        return http.cookies["mcp_inbox"], _csrf(page.text)


async def _signed_in(stack: Stack, token: str) -> tuple[str, str]:
    """The cookie and a CSRF token of an inbox session signed in with `token`."""
    async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
        csrf = _csrf((await http.get("/inbox/login")).text)
        signed = await http.post("/inbox/login", data={"csrf": csrf, "token": token})
        assert signed.status_code == 303 and signed.headers["location"] == "/inbox"
        home = await http.get("/inbox")
        assert home.status_code == 200
        return http.cookies["mcp_inbox"], _csrf(home.text)


async def _try_to_approve(stack: Stack, cookie: str, csrf: str, task_id: str) -> httpx.Response:
    """The attack: read the task page, then answer it, with someone's old cookie; the page
    sends it to sign in, and the answer is what it got."""
    cookies = {"mcp_inbox": cookie}
    async with httpx.AsyncClient(base_url=_base(stack), timeout=15, cookies=cookies) as http:
        page = await http.get(f"/inbox/tasks/{task_id}")
        answer = await http.post(f"/inbox/tasks/{task_id}/answer", data={"csrf": csrf, **APPROVE})
    assert page.status_code == 303 and page.headers["location"] == "/inbox/login"
    return answer


@pytest.fixture
def tokens(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "tokens.json"
    return path, {who: add_token(path, who, []) for who in ("alice", "release-manager")}


async def test_a_local_user_cookie_approves_nothing_after_a_restart_with_tokens(
    fresh_stack: StackFactory, tokens: tuple[Path, dict[str, str]]
) -> None:
    """`make run` (--auth none), then `dev --auth tokens` on the same state secret: the
    local user's cookie is no session there, so it cannot approve release-manager's task."""
    async with fresh_stack(auth="none") as open_stack:
        cookie, csrf = await _local_user_cookie(open_stack)
    path, token = tokens
    async with fresh_stack(auth="tokens", tokens_file=str(path)) as stack:
        alice = _as(stack, token["alice"])
        task_id = await alice.create_task("request_approval", QUESTION)
        await alice.wait_status(task_id, "input_required", within=15)
        refused = await _try_to_approve(stack, cookie, csrf, task_id)
        assert refused.status_code == 403
        assert await _status(alice, task_id) == "input_required"


async def test_a_tokens_cookie_approves_nothing_after_a_switch_to_jwt(
    fresh_stack: StackFactory, tokens: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, token = tokens
    async with fresh_stack(auth="tokens", tokens_file=str(path)) as token_stack:
        cookie, csrf = await _signed_in(token_stack, token["release-manager"])
    key = _rsa()
    async with fresh_stack(auth="jwt", **_jwt_settings(key, tmp_path)) as stack:
        alice = _as(stack, mint(key, sub="alice"))
        task_id = await alice.create_task("request_approval", QUESTION)
        await alice.wait_status(task_id, "input_required", within=15)
        refused = await _try_to_approve(stack, cookie, csrf, task_id)
        assert refused.status_code == 403
        assert await _status(alice, task_id) == "input_required"


async def test_a_revoked_tokens_inbox_session_ends_at_once(
    fresh_stack: StackFactory, tokens: tuple[Path, dict[str, str]]
) -> None:
    """Signed in before the revocation, its cookie neither reads nor answers after it (as
    /mcp answers 401); the task still waits, and a fresh token of the approver decides."""
    path, token = tokens
    async with fresh_stack(auth="tokens", tokens_file=str(path)) as stack:
        alice = _as(stack, token["alice"])
        task_id = await alice.create_task("request_approval", QUESTION)
        await alice.wait_status(task_id, "input_required", within=15)
        cookie, csrf = await _signed_in(stack, token["release-manager"])
        [revoked] = revoke_tokens(path, principal="release-manager")
        assert revoked.principal == "release-manager"
        refused = await _try_to_approve(stack, cookie, csrf, task_id)
        assert refused.status_code == 303 and refused.headers["location"] == "/inbox/login"
        assert (await _as(stack, token["release-manager"]).get_task("t-0")).status == 401
        assert await _status(alice, task_id) == "input_required"
        again, csrf = await _signed_in(stack, add_token(path, "release-manager", []))
        cookies = {"mcp_inbox": again}
        async with httpx.AsyncClient(base_url=_base(stack), cookies=cookies) as http:
            done = await http.post(f"/inbox/tasks/{task_id}/answer", data={"csrf": csrf, **APPROVE})
        assert done.status_code == 303 and done.headers["location"].endswith(task_id)
        await alice.wait_terminal(task_id, within=15)


async def _events_until_end(stack: Stack, cookie: str, query: str, revoke: Path) -> list[str]:
    """The inbox's event stream, opened signed in; once it has opened, the token is revoked.
    Returns the stream's `data:` lines up to its end."""
    seen: list[str] = []
    cookies = {"mcp_inbox": cookie}
    async with httpx.AsyncClient(base_url=_base(stack), timeout=60, cookies=cookies) as http:
        async with asyncio.timeout(60), http.stream("GET", f"/inbox/events{query}") as stream:
            assert stream.status_code == 200
            async for line in stream.aiter_lines():
                if line.startswith("event: ") and not seen:
                    revoke_tokens(revoke, principal="release-manager")
                if line.startswith("data: "):
                    seen.append(line)
    return seen


@pytest.mark.parametrize("followed", ["list", "task"])
async def test_an_event_stream_opened_before_a_revocation_ends_signed_out(
    fresh_stack: StackFactory, tokens: tuple[Path, dict[str, str]], followed: str
) -> None:
    """The live list (and a task page's live updates) opened before the token's revocation
    show nothing more after it: the stream ends saying so, and the page reloads to sign-in."""
    path, token = tokens
    async with fresh_stack(auth="tokens", tokens_file=str(path)) as stack:
        alice = _as(stack, token["alice"])
        task_id = await alice.create_task("request_approval", QUESTION)
        await alice.wait_status(task_id, "input_required", within=15)
        cookie, _ = await _signed_in(stack, token["release-manager"])
        query = "" if followed == "list" else f"?task={task_id}"
        seen = await _events_until_end(stack, cookie, query, path)
        assert seen[-1] == 'data: {"reason": "signed-out"}'


async def test_a_scope_taken_from_a_token_is_gone_from_its_inbox_session(
    fresh_stack: StackFactory, tmp_path: Path
) -> None:
    """The session carries the scopes the tokens file gives the token today, not the ones
    frozen in its cookie at sign-in."""
    path = tmp_path / "tokens.json"
    owner, carol = add_token(path, "alice", []), add_token(path, "carol", ["release"])
    async with fresh_stack(auth="tokens", tokens_file=str(path)) as stack:
        alice = _as(stack, owner)
        question = {"message": "Ship?", "approvers": ["scope:release"]}
        task_id = await alice.create_task("request_approval", question)
        await alice.wait_status(task_id, "input_required", within=15)
        cookie, csrf = await _signed_in(stack, carol)
        document = json.loads(path.read_text())
        for entry in document["tokens"]:
            entry["scopes"] = []  # the operator takes the scope away
        path.write_text(json.dumps(document))
        cookies = {"mcp_inbox": cookie}
        async with httpx.AsyncClient(base_url=_base(stack), cookies=cookies) as http:
            page = await http.get(f"/inbox/tasks/{task_id}")
            assert page.status_code == 404  # no longer one of its approvers
            answer = await http.post(
                f"/inbox/tasks/{task_id}/answer", data={"csrf": csrf, **APPROVE}
            )
        assert answer.status_code in (403, 404)
        assert await _status(alice, task_id) == "input_required"


def _jwt_settings(key: rsa.RSAPrivateKey, tmp_path: Path) -> dict[str, str]:
    public = tmp_path / "public.pem"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return {"jwt_issuer": ISSUER, "jwt_audience": AUDIENCE, "jwt_public_key_path": str(public)}


# ----- the local user's name ------------------------------------------------------------------


def test_no_token_can_be_minted_or_loaded_for_the_local_users_name(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    with pytest.raises(ValueError, match="reserved for the local user"):
        add_token(path, "anonymous", [])
    add_token(path, "alice", [])
    document = json.loads(path.read_text())
    document["tokens"].append({"sha256": "0" * 64, "principal": "anonymous", "scopes": []})
    path.write_text(json.dumps(document))  # written by hand
    with pytest.raises(ValueError, match="reserved for the local user"):
        TokenAuthentication(path)


async def test_a_jwt_whose_sub_is_the_local_users_name_is_refused(
    fresh_stack: StackFactory, tmp_path: Path
) -> None:
    """A `sub` of `anonymous` would own the local user's tasks and be every approver's id."""
    key = _rsa()
    async with fresh_stack(auth="jwt", **_jwt_settings(key, tmp_path)) as stack:
        forged = await _as(stack, mint(key, sub="anonymous")).get_task("t-0")
        assert forged.status == 401
        assert "reserved for the local user" in forged.headers["www-authenticate"]
        async with httpx.AsyncClient(base_url=_base(stack), timeout=15) as http:
            csrf = _csrf((await http.get("/inbox/login")).text)
            token = mint(key, sub="anonymous")
            refused = await http.post("/inbox/login", data={"csrf": csrf, "token": token})
            assert refused.status_code == 401 and "reserved for the local user" in refused.text
            assert "set-cookie" not in refused.headers


# ----- token list / revoke -------------------------------------------------------------------


def test_token_list_shows_ids_principals_and_scopes_never_a_hash(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    add_token(path, "alice", ["deploy"])
    second = add_token(path, "alice", [])
    [first, other] = list_tokens(path)
    assert (first.principal, first.scopes) == ("alice", ("deploy",))
    assert len(first.token_id) == 12 and first.token_id not in second
    [gone] = revoke_tokens(path, token_id=first.token_id)
    assert gone == first and list_tokens(path) == [other]
    with pytest.raises(ValueError, match="no token"):
        revoke_tokens(path, token_id=first.token_id)
    with pytest.raises(ValueError, match="at least 12 hex digits"):
        revoke_tokens(path, token_id="abc")


async def test_an_unreadable_tokens_file_refuses_every_token_rather_than_the_old_list(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tokens.json"
    token = add_token(path, "alice", [])
    auth = TokenAuthentication(path)
    assert (await auth.authenticate(f"Bearer {token}")).subject == "alice"
    path.write_text("{not json")
    with pytest.raises(AuthError) as refused:
        await auth.authenticate(f"Bearer {token}")
    assert refused.value.status == 503


def test_the_auth_configuration_binding_tells_modes_and_files_apart(tmp_path: Path) -> None:
    from mcp_server.auth.authenticators import auth_binding

    one = Settings(auth="tokens", tokens_file=str(tmp_path / "a.json"))
    two = Settings(auth="tokens", tokens_file=str(tmp_path / "b.json"))
    assert auth_binding(Settings()) == "none"
    assert len({auth_binding(one), auth_binding(two), auth_binding(Settings())}) == 3
