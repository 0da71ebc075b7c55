"""A codec server for operators: with MCP_TASKS_PAYLOAD_KEY set, Temporal's Web UI and
`temporal workflow show --codec-endpoint` show the payloads this server encrypts
(temporal/codec.py) in the clear, by calling the server the way Temporal documents a codec
server:

- `POST /codec/decode` and `POST /codec/encode`, body `{"payloads": [...]}` (each a Payload in
  protobuf's JSON form: `metadata` values and `data` in base64), answered in the same form;
  the `X-Namespace` header names the namespace the payloads come from.
- Operators only: the request's `Authorization: Bearer <credential>` (what the Web UI sends
  with "Pass the user access token", and `temporal --codec-auth`) is authenticated like any
  request of the server (tokens file or JWT), and must hold MCP_TASKS_CODEC_SCOPE
  (`operator`): 401 without a credential, 403 without the scope. Whoever holds it reads every
  argument, answer and result in the clear.
- Cross-origin only from the Web UI: the origin of MCP_TASKS_TEMPORAL_UI_URL gets its CORS
  answers (preflight included, credentials allowed); a request with any other `Origin` is 403.
- Only this deployment's namespace (`X-Namespace`, when sent, must be MCP_TASKS_NAMESPACE):
  the keys are this deployment's.
- Without MCP_TASKS_PAYLOAD_KEY the paths are 404: there is nothing to decode.

Errors a caller can cause, each a status and a JSON `{"message": ...}`: the constants below.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from temporalio.api.common.v1 import Payloads

from mcp_server.temporal.codec import EncryptionCodec, PayloadKeyError
from mcp_tasks.payload_keys import parse_keys
from mcp_tasks.settings import Settings

CODEC_PATH = "/codec"
# The statuses a caller can cause.
CODEC_NOT_SERVED = 404  # no MCP_TASKS_PAYLOAD_KEY: nothing is encrypted
CODEC_MALFORMED = 400  # not {"payloads": [Payload, ...]} in protobuf JSON
CODEC_UNDECODABLE = 422  # a payload encrypted under a key this deployment does not hold
CODEC_FORBIDDEN = 403  # the credential lacks the scope, another namespace, or another origin
_ALLOWED_HEADERS = "authorization, content-type, x-namespace"


def ui_origin(settings: Settings) -> str | None:
    """The origin (scheme://host[:port]) of the team's Temporal Web UI, when configured."""
    if settings.temporal_ui_url is None:
        return None
    parts = urlsplit(settings.temporal_ui_url)
    return f"{parts.scheme}://{parts.netloc}"


def _is_codec(path: str) -> bool:
    return path.startswith(CODEC_PATH + "/")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status)


class CodecCorsMiddleware:
    """CORS for the codec paths, outside Host/Origin and authentication: the Web UI's origin
    is checked here (its preflight, which carries no credential, answered here), and the
    request goes on without its Origin, so the server's own Origin policy (which does not
    list the Web UI) does not refuse it; the Host check and authentication still apply."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.origin = ui_origin(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_codec(str(scope["path"])):
            await self.app(scope, receive, send)
            return
        origin = Headers(scope=scope).get("origin")
        if origin is not None and origin != self.origin:
            refused = _error(
                CODEC_FORBIDDEN,
                f"Origin {origin} may not call the codec: only MCP_TASKS_TEMPORAL_UI_URL's",
            )
            await refused(scope, receive, send)
            return
        if origin is None:
            await self.app(scope, receive, send)
            return
        cors = {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Credentials": "true",
            "Vary": "Origin",
        }
        if scope["method"] == "OPTIONS":
            preflight = Response(
                status_code=204,
                headers={
                    **cors,
                    "Access-Control-Allow-Methods": "POST",
                    "Access-Control-Allow-Headers": _ALLOWED_HEADERS,
                    "Access-Control-Max-Age": "600",
                },
            )
            await preflight(scope, receive, send)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in cors.items():
                    headers[name] = value
            await send(message)

        inner = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"origin"]}
        await self.app(inner, receive, send_with_cors)


class CodecEndpoint:
    def __init__(self, settings: Settings) -> None:
        self.namespace = settings.namespace
        self.scope = settings.codec_scope
        keys = parse_keys(settings.payload_key) if settings.payload_key else []
        self.codec = EncryptionCodec(keys) if keys else None

    async def decode(self, request: Request) -> Response:
        return await self._convert(request, decode=True)

    async def encode(self, request: Request) -> Response:
        return await self._convert(request, decode=False)

    async def _convert(self, request: Request, decode: bool) -> Response:
        if self.codec is None:
            return _error(CODEC_NOT_SERVED, "No codec here: MCP_TASKS_PAYLOAD_KEY is not set")
        refused = self._refusal(request)
        if refused is not None:
            return refused
        try:
            payloads = _payloads(await request.body())
        except ValueError as err:
            return _error(CODEC_MALFORMED, f'Expected {{"payloads": [...]}}: {err}')
        try:
            converted = (
                await self.codec.decode(payloads) if decode else await self.codec.encode(payloads)
            )
        except PayloadKeyError as err:
            return _error(CODEC_UNDECODABLE, str(err))
        body = json_format.MessageToDict(Payloads(payloads=converted))
        return JSONResponse({"payloads": body.get("payloads", [])})

    def _refusal(self, request: Request) -> Response | None:
        grant = request.scope.get("state", {}).get("grant")
        # None: every scope (the local user of `--auth none`, on loopback only)
        scopes: frozenset[str] | None = getattr(grant, "scopes", frozenset())
        if scopes is not None and self.scope not in scopes:
            return _error(
                CODEC_FORBIDDEN,
                f"The codec needs scope {self.scope!r} (MCP_TASKS_CODEC_SCOPE), which your "
                "credential lacks",
            )
        namespace = request.headers.get("x-namespace")
        if namespace and namespace != self.namespace:
            return _error(
                CODEC_FORBIDDEN,
                f"This codec serves namespace {self.namespace!r}, not {namespace!r}",
            )
        return None


def _payloads(body: bytes) -> Sequence[Any]:
    try:
        parsed = json.loads(body)
    except ValueError as err:
        raise ValueError(f"the body is not JSON ({err})") from None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("payloads"), list):
        raise ValueError("the body has no list `payloads`")
    try:
        return list(json_format.ParseDict({"payloads": parsed["payloads"]}, Payloads()).payloads)
    except (json_format.ParseError, DecodeError, TypeError) as err:
        raise ValueError(f"a payload is not a Temporal Payload in protobuf JSON ({err})") from None


def add_codec_routes(app: Any, settings: Settings) -> None:
    endpoint = CodecEndpoint(settings)
    app.add_route(f"{CODEC_PATH}/decode", endpoint.decode, methods=["POST"])
    app.add_route(f"{CODEC_PATH}/encode", endpoint.encode, methods=["POST"])
