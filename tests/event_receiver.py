"""A client's webhook receiver for events (SEP-3415) over real https on 127.0.0.1, with a
self-signed certificate made for the test (the server trusts it through
MCP_TASKS_EVENTS_CA_FILE, as an operator would a private CA). It verifies every POST with the
independent `standardwebhooks` package, answers the verification handshake by echoing the
challenge (unless told not to), records each event, and can be taken down and brought back on
its port."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for `localhost` and 127.0.0.1, and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "receiver.pem", directory / "receiver.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def new_secret() -> str:
    """A `whsec_` secret, as a client SDK generates one."""
    return "whsec_" + base64.b64encode(os.urandom(32)).decode()


@dataclass(frozen=True)
class Received:
    webhook_id: str
    subscription_id: str
    body: dict[str, Any]


class EventReceiver:
    def __init__(self, port: int, certificate: tuple[Path, Path], secret: str) -> None:
        self.port = port
        self.certificate = certificate
        self.secret = secret
        self.confirm = True  # echo the handshake's challenge
        self.status = 200  # what every verified event is answered with
        self.url = f"https://127.0.0.1:{port}/hooks/events"
        self.events: list[Received] = []  # every verified event POST, retries included
        self.handshakes: list[Received] = []
        self.refused: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    parsed = Webhook(receiver.secret).verify(body, dict(self.headers))
                except (WebhookVerificationError, ValueError) as err:
                    with receiver._lock:
                        receiver.refused.append(str(err))
                    self._answer(401, b"")
                    return
                got = Received(
                    self.headers["webhook-id"], self.headers["X-MCP-Subscription-Id"], parsed
                )
                if parsed.get("type") == "verification":
                    with receiver._lock:
                        receiver.handshakes.append(got)
                    echoed = parsed["challenge"] if receiver.confirm else "not-the-challenge"
                    self._answer(200, json.dumps({"challenge": echoed}).encode())
                    return
                with receiver._lock:
                    receiver.events.append(got)
                self._answer(receiver.status, b"")

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*self.certificate)
        ThreadingHTTPServer.allow_reuse_address = True
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def unique(self) -> dict[str, Received]:
        """The events by webhook-id (a retry of one that arrived is the same event)."""
        with self._lock:
            return {event.webhook_id: event for event in self.events}

    def names(self) -> list[str]:
        return sorted(event.body["name"] for event in self.unique().values())

    async def wait_for(
        self, condition: Callable[[EventReceiver], bool], within: float, what: str
    ) -> None:
        deadline = time.monotonic() + within
        while not condition(self):
            assert time.monotonic() < deadline, (
                f"{what}: not within {within} s; got {self.names()}, refused {self.refused}"
            )
            await asyncio.sleep(0.05)
