"""A webhook receiver over real HTTP on 127.0.0.1, as an operator's service would run one: it
verifies every POST with the independent `standardwebhooks` package (the Standard Webhooks
reference verifier, not this project's code; a bad one gets 401 and is kept apart), records each
genuine delivery, and can be taken down and brought back on its port. Without a secret it
stands for Slack: it checks nothing and records every POST."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass(frozen=True)
class Delivery:
    id: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes = b""


def verifier(secret: str) -> Webhook:
    """The Standard Webhooks verifier of a secret: a `whsec_` one as the package reads it; a
    plain one (an operator's secret of an earlier release) by its UTF-8 bytes, its key."""
    return Webhook(secret if secret.startswith("whsec_") else secret.encode())


class WebhookReceiver:
    def __init__(self, port: int, secret: str, status: int = 204) -> None:
        self.port = port
        self.secret = secret
        self.status = status  # what every genuine delivery is answered with
        self.location = ""  # the Location of a 3xx answer
        self.answer_after = threading.Event()  # cleared: hold every answer until it is set
        self.answer_after.set()
        self.url = f"http://127.0.0.1:{port}/hook"
        self.deliveries: list[Delivery] = []  # every verified POST, duplicates included
        self.refused: list[str] = []  # why each POST that failed verification was refused
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    delivery_id = self.headers["webhook-id"]
                    if receiver.secret:
                        parsed = verifier(receiver.secret).verify(body, dict(self.headers))
                        assert parsed["id"] == delivery_id, "the body's id is the header's"
                    else:  # as Slack: no signature to check; the id header all the same
                        parsed = json.loads(body)
                except (WebhookVerificationError, ValueError, KeyError, AssertionError) as err:
                    with receiver._lock:
                        receiver.refused.append(str(err))
                    self.send_response(401)
                    self.end_headers()
                    return
                with receiver._lock:
                    receiver.deliveries.append(
                        Delivery(delivery_id, dict(self.headers), parsed, body)
                    )
                receiver.answer_after.wait(30)
                self.send_response(receiver.status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.answer_after.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def unique(self) -> dict[str, Delivery]:
        """The genuine deliveries by id (a retry of one that arrived is the same delivery)."""
        with self._lock:
            return {delivery.id: delivery for delivery in self.deliveries}

    def events(self) -> list[str]:
        return sorted(d.body["event"] for d in self.unique().values())

    async def wait_for(
        self, condition: Callable[[WebhookReceiver], bool], within: float, what: str
    ) -> None:
        deadline = time.monotonic() + within
        while not condition(self):
            assert time.monotonic() < deadline, (
                f"{what}: not within {within} s; got {self.events()}, refused {self.refused}"
            )
            await asyncio.sleep(0.05)
