"""Stateless Streamable HTTP: one POST endpoint, one JSON-RPC message per request (wire §1.8).

Order of checks for a POST (each failure answers at once, echoing the request id when known):
 1. Host and Origin (DNS rebinding): 403. Authentication: 401 / 403 (auth.py).
 2. Content-Type must be JSON: 415. Body size: 413, before parsing.
 3. JSON parse: -32700. Envelope (object, jsonrpc "2.0", string method, id string|integer,
    no batches, no client responses): -32600.
 4. Notifications: the Mcp-Method header is checked, then 202 with no body.
 5. Unknown method: -32601 / 404, before any other validation of the request.
 6. Mcp-Method header: -32020. params must be an object: -32602.
 7. `_meta` with protocolVersion and clientCapabilities: -32602 / 400.
 8. MCP-Protocol-Version header equal to `_meta`: -32020. Version supported: -32022.
 9. Mcp-Name header: -32020. Then the method handler.
No session is ever minted and `Mcp-Session-Id` is ignored. Every response is application/json,
except the SSE stream of `subscriptions/listen`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from mcp_server.http import headers
from mcp_server.http.auth import Authenticator, AuthError
from mcp_server.http.origin import OriginPolicy
from mcp_server.protocol import audit, subscriptions
from mcp_server.protocol.context import RequestContext, Services
from mcp_server.protocol.dispatch import METHODS, Handler
from mcp_server.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    from_task_error,
)
from mcp_server.protocol.wire import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    SUPPORTED_VERSIONS,
)
from mcp_server.tasks.errors import TaskError

log = logging.getLogger("mcp_server.http.transport")

RequestId = str | int | None


class BodyTooLarge(Exception):
    pass


def error_response(error: McpError, request_id: RequestId) -> JSONResponse:
    body: dict[str, Any] = {"jsonrpc": "2.0", "error": error.to_error_object()}
    if request_id is not None:  # MCP's schema allows an absent id, never a null one
        body["id"] = request_id
    return JSONResponse(body, status_code=error.http_status, headers=error.headers)


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_envelope(body: bytes) -> tuple[dict[str, Any], RequestId]:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise McpError(PARSE_ERROR, f"Parse error: {exc}") from exc
    if isinstance(message, list):
        raise McpError(INVALID_REQUEST, "Batches are not supported: send one message per POST")
    if not isinstance(message, dict):
        raise McpError(INVALID_REQUEST, "A JSON-RPC message must be an object")
    request_id = message.get("id")
    valid_id = isinstance(request_id, str | int) and not isinstance(request_id, bool)
    if "id" in message and not valid_id:
        raise McpError(INVALID_REQUEST, "The request id must be a string or an integer")
    if message.get("jsonrpc") != "2.0":
        raise McpError(INVALID_REQUEST, 'jsonrpc must be "2.0"')
    if "method" not in message:
        raise McpError(INVALID_REQUEST, "Clients may only send requests and notifications")
    if not isinstance(message["method"], str):
        raise McpError(INVALID_REQUEST, "method must be a string")
    return message, request_id if valid_id else None


def _meta_of(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise McpError(INVALID_PARAMS, "params._meta is required")
    version = meta.get(META_PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise McpError(INVALID_PARAMS, f"params._meta[{META_PROTOCOL_VERSION!r}] is required")
    capabilities = meta.get(META_CLIENT_CAPABILITIES)
    if not isinstance(capabilities, dict):
        raise McpError(INVALID_PARAMS, f"params._meta[{META_CLIENT_CAPABILITIES!r}] is required")
    return version, capabilities


def _check_version(version: str) -> None:
    if version not in SUPPORTED_VERSIONS:
        raise McpError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version {version!r}; this server supports "
            f"{', '.join(SUPPORTED_VERSIONS)}",
            {"supported": list(SUPPORTED_VERSIONS), "requested": version},
        )


class McpEndpoint:
    def __init__(
        self,
        services: Services,
        origin_policy: OriginPolicy,
        max_body_bytes: int,
        authenticator: Authenticator,
    ) -> None:
        self.services = services
        self.origin_policy = origin_policy
        self.max_body_bytes = max_body_bytes
        self.authenticator = authenticator

    async def __call__(self, request: Request) -> Response:
        host = request.headers.get("host")
        if not self.origin_policy.host_allowed(host) or not self.origin_policy.origin_allowed(
            request.headers.get("origin"), host
        ):
            error = McpError(
                INVALID_REQUEST, "Forbidden: Host or Origin not allowed", http_status=403
            )
            return error_response(error, None)
        try:
            principal = (
                await self.authenticator.authenticate(request.headers.get("authorization"))
            ).digest
        except AuthError as err:
            refusal = McpError(
                INVALID_REQUEST,
                f"{'Unauthorized' if err.status == 401 else 'Forbidden'}: {err.description}",
                http_status=err.status,
                headers={"WWW-Authenticate": err.www_authenticate()},
            )
            return error_response(refusal, None)
        content_type = request.headers.get("content-type", "")
        if "application/json" not in content_type.lower():
            error = McpError(
                INVALID_REQUEST, "Content-Type must be application/json", http_status=415
            )
            return error_response(error, None)
        try:
            body = await read_body(request, self.max_body_bytes)
        except BodyTooLarge:
            error = McpError(
                INVALID_REQUEST,
                f"Request body exceeds the limit of {self.max_body_bytes} bytes",
                http_status=413,
            )
            return error_response(error, None)
        request_id: RequestId = None
        try:
            message, request_id = _parse_envelope(body)
            if "id" not in message:
                headers.check_method(request.headers, message["method"])
                return Response(status_code=202)
            return await self._dispatch(request, message, request_id, principal)
        except McpError as error:
            return error_response(error, request_id)
        except TaskError as err:
            return error_response(from_task_error(err), request_id)
        except Exception:
            log.exception("unhandled error in %s", request.url.path)
            return error_response(McpError(INTERNAL_ERROR, "Internal error"), request_id)

    async def _dispatch(
        self, request: Request, message: dict[str, Any], request_id: RequestId, principal: str
    ) -> Response:
        method: str = message["method"]
        handler = METHODS.get(method)
        if handler is None and method != subscriptions.LISTEN_METHOD:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        headers.check_method(request.headers, method)
        params = message.get("params", {})
        if not isinstance(params, dict):
            raise McpError(INVALID_PARAMS, "params must be an object")
        version, capabilities = _meta_of(params)
        headers.check_protocol_version(request.headers, version)
        _check_version(version)
        headers.check_name(request.headers, method, params)
        assert request_id is not None
        context = RequestContext(
            request_id=request_id,
            method=method,
            params=params,
            capabilities=capabilities,
            principal=principal,
            headers=request.headers,
        )
        if handler is None:
            subscription = await subscriptions.prepare(context, self.services)
            return StreamingResponse(
                subscriptions.sse_events(subscription),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        result = await self._audited(handler, context)
        meta = dict(result.get("_meta") or {})
        meta[META_SERVER_INFO] = self.services.server_info
        result["_meta"] = meta
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def _audited(self, handler: Handler, context: RequestContext) -> dict[str, Any]:
        """Run the handler; write an audit line when it creates, answers or cancels a task."""
        is_call = context.method == "tools/call"
        name = context.params.get("name") if is_call else None
        tool = self.services.registry.get(name) if isinstance(name, str) else None
        if context.method not in audit.AUDITED_METHODS or (
            is_call and (tool is None or tool.task_support == "never")
        ):
            return await handler(context, self.services)
        task_id = None if is_call else context.params.get("taskId")
        try:
            result = await handler(context, self.services)
        except McpError as error:
            self._audit(context, task_id, f"error {error.code}", name)
            raise
        if is_call and result.get("resultType") != "task":
            return result  # run synchronously, or an MRTR round: no task changed
        if is_call:
            task_id = result["taskId"]
        self._audit(context, task_id, "created" if is_call else "acked", name)
        return result

    def _audit(self, context: RequestContext, task_id: Any, outcome: str, tool: Any) -> None:
        audit.record(
            method=context.method,
            request_id=context.request_id,
            principal=context.principal,
            task_id=task_id if isinstance(task_id, str) else None,
            outcome=outcome,
            tool=tool if isinstance(tool, str) else None,
        )
