"""The typed wire: pydantic models for every message this server reads or writes.

- Core messages of both eras come from `mcp_types` (the official Python SDK's wire models):
  `ClientCapabilities`, `Tool`, `CallToolResult`, `InitializeResult`, the 2025-11-25 `Task`...
- The tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`) has no models there, so
  they are defined here from its schema: a flat `CreateTaskResult` (`Result & Task`, never a
  nested `task`), `GetTaskResult` (`Result & DetailedTask`, `resultType: "complete"`), the
  `tasks/update` params and the `notifications/tasks` params, with a `Literal` status.
- Requests are parsed into models at the edge (`parse_params`): a validation error becomes
  -32602 naming the field; responses are serialised from models (`to_wire`), camelCase on the
  wire and snake_case in Python, absent optional fields omitted (`ttlMs` alone is sent as null).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

import mcp_types as core
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from mcp_server.protocol.frame.answer_schema import answer_problem
from mcp_server.protocol.frame.errors import McpError, invalid_params
from mcp_server.protocol.frame.wire import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_RELATED_TASK_IDS,
    META_SERVER_INFO,
)
from mcp_tasks.contracts.task_status import TaskStatus
from workflows.steering import MAX_STEER_CHARS

M = TypeVar("M", bound=BaseModel)
JsonObject = dict[str, Any]
RequestId = str | int


class WireModel(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown keys kept when read."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


def to_wire(model: BaseModel) -> JsonObject:
    """The JSON object a model stands for on the wire."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def _field_path(error: Any) -> str:
    return ".".join(str(part) for part in error["loc"]) or "(root)"


def parse_params(model: type[M], params: JsonObject, where: str = "params") -> M:
    """`params` as `model`, or -32602 naming the first field that is wrong."""
    try:
        return model.model_validate(params)
    except ValidationError as err:
        first = err.errors()[0]
        problems = "; ".join(f"{where}.{_field_path(e)}: {e['msg']}" for e in err.errors()[:5])
        raise invalid_params(
            f"Invalid {where}: {where}.{_field_path(first)}: {first['msg']}",
            {"errors": problems.split("; ")},
        ) from err


# ----- 2026-07-28 request envelope -----------------------------------------------------------


class RequestMeta(BaseModel):
    """`params._meta` of a 2026-07-28 request: version and capabilities are required."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")
    protocol_version: str = Field(alias="io.modelcontextprotocol/protocolVersion")
    client_capabilities: core.ClientCapabilities = Field(
        alias="io.modelcontextprotocol/clientCapabilities"
    )
    client_info: JsonObject | None = Field(default=None, alias="io.modelcontextprotocol/clientInfo")
    progress_token: str | int | None = Field(default=None, alias="progressToken")


def request_meta(params: JsonObject) -> RequestMeta:
    """The required `_meta` of a 2026-07-28 request: -32602 (HTTP 400) when absent or wrong."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise invalid_params("params._meta is required")
    for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES):
        if key not in meta:
            raise invalid_params(f"params._meta[{key!r}] is required")
    related_task_ids(meta)
    return parse_params(RequestMeta, meta, "params._meta")


# At most this many related task ids on one request (each is looked up like a tasks/get).
MAX_RELATED_TASK_IDS = 20


def related_task_ids(meta: object) -> list[str]:
    """`_meta["io.modelcontextprotocol/relatedTaskIds"]` of a request, without repeats ([] when
    absent): -32602 unless it is an array of at most MAX_RELATED_TASK_IDS non-empty strings."""
    value = meta.get(META_RELATED_TASK_IDS) if isinstance(meta, dict) else None
    if value is None:
        return []
    where = f"params._meta[{META_RELATED_TASK_IDS!r}]"
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise invalid_params(f"{where} must be an array of task ids (non-empty strings)")
    if len(value) > MAX_RELATED_TASK_IDS:
        raise invalid_params(
            f"{where} names {len(value)} tasks; at most {MAX_RELATED_TASK_IDS} are accepted"
        )
    return list(dict.fromkeys(value))


class Params(WireModel):
    """Base of every request's params: `_meta` is read by the transport, not the handler."""

    meta: JsonObject | None = Field(default=None, alias="_meta")


class PaginatedParams(Params):
    cursor: str | None = None


class ToolCallParams(Params):
    name: str
    arguments: JsonObject | None = None
    # MRTR retries (2026-07-28). Values are checked against the request each key answers.
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    # 2025-11-25 task augmentation; ignored at 2026-07-28, where the capability decides.
    task: core.TaskMetadata | None = None


class TaskIdParams(Params):
    task_id: str = Field(min_length=1)


class UpdateTaskParams(TaskIdParams):
    input_responses: dict[str, Any]


class SteerTaskParams(TaskIdParams):
    """`mcp-tasks-temporal/steer`: one message for the task, delivered at its next safe point."""

    message: str = Field(min_length=1, max_length=MAX_STEER_CHARS)


class ListenParams(Params):
    notifications: core.SubscriptionFilter


# ----- results ---------------------------------------------------------------------------------


class CompleteResult(WireModel):
    """An empty 2026-07-28 result: `{"resultType": "complete"}` (acks of update and cancel)."""

    result_type: Literal["complete"] = "complete"


class ExtTask(WireModel):
    """The tasks extension's `Task`. `ttlMs` is required and nullable: null is sent, not
    omitted; every other absent field is omitted."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None

    @model_serializer(mode="wrap")
    def _keep_null_ttl(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> JsonObject:
        data: JsonObject = handler(self)
        data["ttlMs" if info.by_alias else "ttl_ms"] = self.ttl_ms
        return data


class DetailedTask(ExtTask):
    """`inputRequests` only when input_required, `result` only when completed, `error` only
    when failed. `paused` only to a client that declared the steering extension
    (protocol/core/client_view.py)."""

    status: TaskStatus | Literal["paused"]  # type: ignore[assignment]
    input_requests: dict[str, JsonObject] | None = None
    result: core.CallToolResult | None = None
    error: core.ErrorData | None = None


class CreateTaskResult(ExtTask):
    result_type: Literal["task"] = "task"


class GetTaskResult(DetailedTask):
    result_type: Literal["complete"] = "complete"
    # Result's `_meta`: this server's own keys (wire.META_TASK_PROGRESS); omitted when None.
    meta: JsonObject | None = Field(default=None, alias="_meta")


class InputRequiredResult(WireModel):
    result_type: Literal["input_required"] = "input_required"
    input_requests: dict[str, JsonObject]
    request_state: str | None = None


class DiscoverResult(WireModel):
    result_type: Literal["complete"] = "complete"
    supported_versions: list[str]
    capabilities: core.ServerCapabilities
    instructions: str | None = None
    ttl_ms: int
    cache_scope: Literal["public", "private"]


class ListToolsResult(WireModel):
    result_type: Literal["complete"] = "complete"
    tools: list[core.Tool]
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


# ----- the answers a client gives to input requests -------------------------------------------

_RESPONSE_MODEL: dict[str, type[BaseModel]] = {
    "elicitation/create": core.ElicitResult,
    "sampling/createMessage": core.CreateMessageResult,
    "roots/list": core.ListRootsResult,
}


def check_input_response(key: str, request: Mapping[str, Any], response: Any) -> McpError | None:
    """A -32602 error when `response` is not a valid answer to `request`, else None: its shape
    (the result type of the request's method), then, for an accepted elicitation, its content
    against the form that asked for it (answer_schema.py)."""
    where = f"inputResponses.{key}"
    if not isinstance(response, dict):
        return invalid_params(f"{where} must be an object")
    model = _RESPONSE_MODEL.get(str(request.get("method")))
    if model is None:
        return None
    if model is core.CreateMessageResult and isinstance(response.get("content"), list):
        model = core.CreateMessageResultWithTools
    try:
        model.model_validate(response)
    except ValidationError as err:
        first = err.errors()[0]
        return invalid_params(f"{where}.{_field_path(first)}: {first['msg']}")
    problem = answer_problem(request, response)
    return None if problem is None else invalid_params(f"{where}: {problem}")


# ----- messages on a stream --------------------------------------------------------------------


class Notification(BaseModel):
    """A JSON-RPC notification whose params are a model."""

    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: BaseModel


class Response(BaseModel):
    """A JSON-RPC response whose result is a model."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    result: BaseModel


class ErrorResponse(BaseModel):
    """A JSON-RPC error response. MCP allows an absent id (when it is unknown), never null."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId | None = None
    error: core.ErrorData


def error_message(error: McpError, request_id: RequestId | None) -> ErrorResponse:
    data = core.ErrorData(code=error.code, message=error.message, data=error.data)
    return ErrorResponse(id=request_id, error=data)


class SubscriptionMeta(WireModel):
    subscription_id: RequestId = Field(alias="io.modelcontextprotocol/subscriptionId")


class AcknowledgedParams(WireModel):
    notifications: core.SubscriptionFilter
    meta: JsonObject = Field(alias="_meta")


class TaskNotificationParams(DetailedTask):
    meta: JsonObject = Field(alias="_meta")


class EmptyNotificationParams(WireModel):
    meta: JsonObject = Field(alias="_meta")


class ListenResult(CompleteResult):
    meta: JsonObject = Field(alias="_meta")


def to_message(message: BaseModel | JsonObject) -> JsonObject:
    """A JSON-RPC message as JSON: models serialised (nested params and results too)."""
    if isinstance(message, dict):
        return message
    return message.model_dump(mode="json", by_alias=True, exclude_none=True, serialize_as_any=True)


def result_message(
    result: BaseModel, request_id: RequestId, server_info: JsonObject | None
) -> JsonObject:
    """The JSON-RPC response carrying `result`, as every transport sends it. At 2026-07-28
    (`server_info` given) the result carries `serverInfo` in `_meta`; at 2025-11-25 it carries
    no `resultType`, a field that era does not know."""
    message = to_message(Response(id=request_id, result=result))
    body = message["result"]
    if server_info is None:
        body.pop("resultType", None)
    else:
        body["_meta"] = {**(body.get("_meta") or {}), META_SERVER_INFO: server_info}
    return message
