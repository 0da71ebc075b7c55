"""What `.dockerignore` lets into the image's build context, computed the way Docker does.

Docker (moby's patternmatcher, `MatchesOrParentMatches`) reads the patterns in order; a path
is excluded when the last pattern matching it or one of its parent directories is not a `!`
pattern. `*` and `?` stay inside one path segment, `**` spans any number of them.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pattern_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + r"\Z")


def read_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    patterns = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        patterns.append((negated, pattern_regex(line.lstrip("!").strip("/"))))
    return patterns


def is_sent(path: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for negated, regex in patterns:
        if any(regex.match(prefix) for prefix in prefixes):
            excluded = not negated
    return not excluded


def test_the_context_holds_what_the_server_and_worker_are_built_from() -> None:
    patterns = read_patterns()
    for path in [
        "pyproject.toml",
        "README.md",
        "requirements/runtime.txt",
        "mcp_server/runtime/cli.py",
        "mcp_tasks/settings.py",
        "workflows/__init__.py",
        "activities/__init__.py",
        "pipelines",
        "imports",
    ]:
        assert (ROOT / path).exists(), path
        assert is_sent(path, patterns), path


def test_the_context_leaves_out_the_venv_node_modules_git_caches_and_tokens() -> None:
    patterns = read_patterns()
    for path in [
        ".venv/bin/python",
        "tests/clients/js/node_modules/x/index.js",
        ".conformance/package.json",
        ".git/HEAD",
        "mcp_server/__pycache__/app.cpython-311.pyc",
        "imports/records.db",
        "imports/principals/alice.json",
        "tokens.json",
        "alice.token",
        "tests/test_app.py",
        "requirements/dev.txt",
    ]:
        assert not is_sent(path, patterns), path


def test_the_image_installs_the_lock_and_runs_as_the_numeric_user_kubernetes_expects() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY requirements/runtime.txt" in dockerfile
    assert "pip install --no-cache-dir --require-hashes -r /tmp/runtime.txt" in dockerfile
    assert "pip install --no-cache-dir --no-deps /wheels/*.whl" in dockerfile
    users = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("USER ")]
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit() and int(gid) != 0
    # deploy/k8s sets the same user (runAsNonRoot can only check a numeric one).
    for manifest in ("server.yaml", "worker.yaml"):
        text = (ROOT / "deploy" / "k8s" / "base" / manifest).read_text()
        assert f"runAsUser: {uid}" in text and f"runAsGroup: {gid}" in text, manifest
