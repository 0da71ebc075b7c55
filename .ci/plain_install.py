"""CI: the project installed alone (no dev or test extras) in a fresh venv serves the inbox.

The test suite's requirements pull in packages the server also imports (python-multipart came
in through a client library once, so the inbox's forms answered 500 after a plain install while
every test passed). This script runs with the fresh venv's Python: it mints a token, starts
`mcp-tasks dev --auth tokens` on loopback, signs in to the inbox through its form (a
multipart/urlencoded POST with the CSRF token), opens the inbox signed in and signs out, then
stops the server by its PID. Only the standard library is used here, so nothing the project
failed to declare can be borrowed from this script.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def main() -> int:
    bin_dir = Path(sys.executable).parent
    cli = str(bin_dir / "mcp-tasks")
    work = Path(tempfile.mkdtemp(prefix="plain-install-"))
    tokens = work / "tokens.json"
    minted = subprocess.run(
        [cli, "token", "add", "--file", str(tokens), "--principal", "ci-approver"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    token = minted.strip().splitlines()[-1].split()[-1]
    port, temporal_port = free_port(), free_port()
    env = dict(os.environ, MCP_TASKS_TOKENS_FILE=str(tokens))
    log = open(work / "dev.log", "wb")
    proc = subprocess.Popen(
        [
            cli,
            "dev",
            "--auth",
            "tokens",
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--data-dir",
            str(work / "data"),
            "--temporal-port",
            str(temporal_port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=work,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{base}/readyz", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                print((work / "dev.log").read_text()[-4000:])
                print("plain install: the server did not become ready")
                return 1
            time.sleep(1)
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
        with opener.open(f"{base}/inbox/login", timeout=10) as r:
            page = r.read().decode()
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf, "the sign-in page has no CSRF field"
        body = urllib.parse.urlencode({"csrf": csrf.group(1), "token": token}).encode()
        try:
            opener.open(f"{base}/inbox/login", data=body, timeout=10)
            print("plain install: sign-in did not redirect")
            return 1
        except urllib.error.HTTPError as err:
            if err.code != 303:
                print(f"plain install: sign-in answered {err.code}: {err.read()[:500]!r}")
                return 1
        with opener.open(f"{base}/inbox", timeout=10) as r:
            inbox = r.read().decode()
        assert "ci-approver" in inbox, "the inbox does not show the signed-in principal"
        print("plain install: signed in to the inbox as ci-approver with no extras installed")
        return 0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


if __name__ == "__main__":
    sys.exit(main())
