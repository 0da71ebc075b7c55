"""The attack: another local user read a fresh data dir. It was created 0755 with
`temporal.db` 0644 (every task's arguments and results), and the state secret (it signs
request state and sessions) existed 0644 for an instant before its chmod. Now the data dir is
0700 and every file in it 0600 from its creation (mcp_server/runtime/data_dir.py)."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server.runtime.data_dir import STATE_SECRET_FILE, state_secret_of
from mcp_server.runtime.devserver import TemporalDevServer, free_port
from mcp_server.runtime.supervisor import claim_data_dir


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """As on most machines: files 0644 and dirs 0755 unless the code asks otherwise."""
    before = os.umask(0o022)
    yield
    os.umask(before)


@pytest.mark.e2e  # starts a dev server of its own: the files it writes are what is tested
async def test_a_new_data_dir_and_every_file_temporal_writes_in_it_are_private(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "new" / "data"
    server = TemporalDevServer(data_dir, port=free_port())
    try:
        await server.start_or_join(timeout_s=60)
    finally:
        server.stop()
    assert mode(data_dir) == 0o700
    files = [p for p in data_dir.iterdir() if p.is_file()]
    assert {p.name for p in files} >= {"temporal.db", "temporal.log", "temporal.json"}
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}


def test_the_dev_lock_and_state_secret_are_private_from_their_first_instant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    claim_fd = claim_data_dir(data_dir, "http://127.0.0.1:1/mcp")
    os.close(claim_fd)
    seen_at_write: list[int] = []
    real_token_hex = secrets.token_hex

    def token_hex(n: int) -> str:  # runs once the file exists, before anything is in it
        seen_at_write.append(mode(data_dir / STATE_SECRET_FILE))
        return real_token_hex(n)

    monkeypatch.setattr(secrets, "token_hex", token_hex)
    chmods: list[tuple[str, int]] = []
    real_chmod = Path.chmod

    def spied_chmod(path: Path, new_mode: int, **kwargs: bool) -> None:
        chmods.append((path.name, mode(path)))  # the mode it had until this chmod
        real_chmod(path, new_mode, **kwargs)

    monkeypatch.setattr(Path, "chmod", spied_chmod)
    secret = state_secret_of(data_dir)
    assert len(secret) == 64 and state_secret_of(data_dir) == secret  # made once, then read
    assert seen_at_write == [0o600]
    assert [m for name, m in chmods if name == STATE_SECRET_FILE] == []
    assert mode(data_dir) == 0o700 and mode(data_dir / STATE_SECRET_FILE) == 0o600
    assert mode(data_dir / "dev.lock") == 0o600


def test_an_existing_data_dir_keeps_the_mode_its_owner_gave_it(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o750)
    state_secret_of(shared)
    assert mode(shared) == 0o750 and mode(shared / STATE_SECRET_FILE) == 0o600
