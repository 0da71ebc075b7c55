"""The tokens file as Kubernetes mounts a Secret: `tokens.json` is a symlink into `..data`, itself
a symlink to a timestamped folder, and the kubelet updates the Secret by writing a new folder
and swapping `..data` atomically. The server's TokenAuthentication sees the swap on its next
request: a revoked token stops working and a new one works, without a restart."""

from __future__ import annotations

import os
from pathlib import Path

from mcp_server.auth.authenticators import TokenAuthentication, token_hash
from mcp_server.runtime.tokens import add_token


def secret_version(volume: Path, name: str, principals: list[str]) -> dict[str, str]:
    """A folder of the Secret's files, as the kubelet writes one; the token of each principal."""
    folder = volume / name
    folder.mkdir()
    return {who: add_token(folder / "tokens.json", who, ["deploy"]) for who in principals}


def point_data_at(volume: Path, name: str) -> None:
    """The kubelet's atomic swap: a new `..data` symlink renamed over the old one."""
    staged = volume / "..data_tmp"
    staged.symlink_to(name)
    os.replace(staged, volume / "..data")


def test_a_secret_volume_update_revokes_and_adds_tokens_without_a_restart(tmp_path: Path) -> None:
    first = secret_version(tmp_path, "..2026_12_06_20_00_00.1", ["alice", "bob"])
    point_data_at(tmp_path, "..2026_12_06_20_00_00.1")
    (tmp_path / "tokens.json").symlink_to("..data/tokens.json")
    tokens = TokenAuthentication(tmp_path / "tokens.json")
    assert tokens.principal_of(token_hash(first["alice"])) is not None

    second = secret_version(tmp_path, "..2026_12_06_20_01_00.2", ["bob", "carol"])
    point_data_at(tmp_path, "..2026_12_06_20_01_00.2")
    assert tokens.principal_of(token_hash(first["alice"])) is None  # revoked
    assert tokens.principal_of(token_hash(first["bob"])) is None  # bob's was minted again
    carol = tokens.principal_of(token_hash(second["carol"]))
    assert carol is not None and carol.subject == "carol"
