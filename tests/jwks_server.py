"""A JWKS endpoint over real HTTP, as an authorization server publishes its keys, that a test
can take down (an outage) before the test ends, or make hang (`answer` cleared: every GET
waits until it is set), and that counts the GETs it was sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


class JwksServer:
    def __init__(self, key: rsa.RSAPrivateKey, kid: str) -> None:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        body = json.dumps({"keys": [{**jwk, "kid": kid, "use": "sig", "alg": "RS256"}]}).encode()
        self.answer = threading.Event()
        self.answer.set()
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests += 1
                server.answer.wait(30)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/jwks.json"
        self._stopped = False

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self.answer.set()
            self._server.shutdown()
            self._server.server_close()
