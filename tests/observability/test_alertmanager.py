"""One incident, one page: the shipped Alertmanager configuration
(deploy/alertmanager/alertmanager.yml) run by Alertmanager itself, Debian's
`prometheus-alertmanager` (which .ci/run installs; in CI its absence is a failure, elsewhere the
tests skip and say so). The alerts of a worker outage, posted in the order Prometheus fires them,
reach the page receiver (a webhook on loopback) exactly once; the ones that follow from it are
muted by the inhibit rules, and Alertmanager's API says by which."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mcp_server.runtime.devserver import free_port

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy/alertmanager/alertmanager.yml"
ALERTS = ROOT / "deploy/prometheus/alerts.yml"


def binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing in CI: .ci/run installs prometheus-alertmanager")
        pytest.skip(f"{name} is not installed (apt-get install -y prometheus-alertmanager)")
    return found


class Receiver:
    """The webhook receivers of the configuration: every notification, by path."""

    def __init__(self) -> None:
        self.notifications: list[tuple[str, dict[str, Any]]] = []
        received = self.notifications

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def pages(self) -> list[dict[str, Any]]:
        return [body for path, body in self.notifications if path == "/page"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def until(check: Callable[[], Any], within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what} within {within} s"
        time.sleep(0.1)
    return found


def shipped_config_for(receiver: Receiver, into: Path) -> Path:
    """The shipped file as is (routes, inhibit rules), but for the receivers' URLs, pointed at
    `receiver`, and its group waits, shortened from seconds and minutes to a second."""
    config = yaml.safe_load(CONFIG.read_text())
    for route in [config["route"], *config["route"]["routes"]]:
        route.pop("group_wait", None)
        route.pop("group_interval", None)
    config["route"].update(group_wait="1s", group_interval="1s")
    for entry in config["receivers"]:
        for hook in entry["webhook_configs"]:
            hook["url"] = hook["url"].replace("127.0.0.1:9095", f"127.0.0.1:{receiver.port}")
    path = into / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def fired(name: str, **labels: str) -> dict[str, Any]:
    """An alert as Prometheus sends it: its rule's labels and annotations."""
    rules = yaml.safe_load(ALERTS.read_text())
    rule = next(r for g in rules["groups"] for r in g["rules"] if r["alert"] == name)
    return {
        "labels": {"alertname": name, **rule["labels"], **labels},
        "annotations": {"summary": name, "runbook_url": rule["annotations"]["runbook_url"]},
        "startsAt": datetime.now(UTC).isoformat(),
    }


@pytest.fixture
def alertmanager(receiver: Receiver, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    config = shipped_config_for(receiver, tmp_path)
    with (tmp_path / "alertmanager.log").open("wb") as log:
        command = [
            binary("prometheus-alertmanager"),
            f"--config.file={config}",
            f"--storage.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",  # one instance: no gossip port
        ]
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            assert process.poll() is None, (tmp_path / "alertmanager.log").read_text()
            try:
                return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        until(ready, 30, "Alertmanager ready")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_shipped_configuration_is_valid_for_amtool() -> None:
    checked = subprocess.run(
        [binary("amtool"), "check-config", str(CONFIG)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_worker_outage_pages_once(alertmanager: str, receiver: Receiver) -> None:
    def post(*alerts: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{alertmanager}/api/v2/alerts", json=list(alerts))

    # In the order of the walkthrough's `kill -9` of the only worker: its target is down
    # (+2 min), no worker polls (+2.5 min), then the creations' 503s (+5 min).
    assert post(fired("McpTasksWorkerDown", job="mcp-worker", instance="w:9464")).is_success
    assert post(fired("McpTasksNoWorkerPolling")).is_success
    page = until(receiver.pages, 30, "the page for no worker polling")
    assert post(fired("McpTasksServerErrors")).is_success

    def state(name: str) -> dict[str, Any] | None:
        alerts = httpx.get(f"{alertmanager}/api/v2/alerts").json()
        return next((a["status"] for a in alerts if a["labels"]["alertname"] == name), None)

    muted = until(
        lambda: (s := state("McpTasksServerErrors")) and s["state"] == "suppressed" and s,
        30,
        "McpTasksServerErrors muted",
    )
    assert muted["inhibitedBy"]
    worker_down = state("McpTasksWorkerDown")
    assert worker_down is not None and worker_down["state"] == "suppressed"
    # A later page of its own group: once it arrives, the muted alerts' groups, older, have
    # flushed too; none of them paged.
    assert post(fired("McpTasksDown", job="mcp-server", instance="a:8000")).is_success
    until(lambda: len(receiver.pages()) == 2, 30, "the later page")
    pages = receiver.pages()
    named = [[a["labels"]["alertname"] for a in body["alerts"]] for body in pages]
    assert named == [["McpTasksNoWorkerPolling"], ["McpTasksDown"]], named
    assert page[0]["alerts"][0]["labels"]["severity"] == "page"
    assert not [path for path, _ in receiver.notifications if path == "/ticket"]
