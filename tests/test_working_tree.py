"""What the docs' walkthroughs write into a clone stays out of git: token hashes, tokens and
scratch files are ignored, and no tokens file is tracked (a documented `token add` must never
leave hashes in a tracked file)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Each path a documented command writes, relative to the clone's root.
WRITTEN_BY_THE_DOCS = [
    "tokens.json",  # README, Getting started: token add --file tokens.json
    "deploy/tokens.json",  # docs/operations/deploy.md, the quick local stack
    "deploy/production/tokens.json",  # the production stack
    "deploy/existing-cluster/tokens.json",  # docs/operations/existing-cluster.md
    "deploy/prometheus/token",  # docs/operations/observability.md
    "prometheus-token",  # docs/operations/deploy.md, Kubernetes
    "headers.txt",  # docs/hosts.md, the 2025-11-25 curl walkthrough
    "result.txt",
]

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git clone"
)


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30
    )


@pytest.mark.parametrize("path", WRITTEN_BY_THE_DOCS)
def test_what_a_walkthrough_writes_is_ignored(path: str) -> None:
    assert git("check-ignore", "--no-index", "-q", path).returncode == 0, path


def test_the_ignore_check_can_fail() -> None:
    assert git("check-ignore", "--no-index", "-q", "docs/index.md").returncode == 1


def test_no_tokens_file_is_tracked() -> None:
    tracked = git("ls-files").stdout.splitlines()
    assert [p for p in tracked if Path(p).name in ("tokens.json", "token")] == []
