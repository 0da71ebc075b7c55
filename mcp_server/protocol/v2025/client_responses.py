"""A client's response to a request this server sent it, on any transport (HTTP, stdio).

At 2025-11-25 a task's question goes to a host without task support as an `elicitation/create`
request whose id names the task and the question (`relay.input_request_id`). Its response:
- with a `result`: the result (without `_meta`) is delivered to the task exactly as a
  `tasks/update` would deliver it, so the response may reach any replica;
- an error, or an id this server never issued: logged and dropped. The task keeps waiting and
  nothing is lost;
- an answer the task refuses: logged, and recorded for the attached call of this process that
  relays the question, which asks it again at once saying what was wrong (refused_answers.py);
- a response whose id names a task (`mcp-input:<taskId>:<key>`) counts against the sender's
  `tasks/update` rate limit, as the `tasks/update` it stands for would; a task that is missing
  or someone else's gets the ordinary "not found" (-32602), counted by the "not found" limit.
  Both refusals are returned by `route` for the transport to answer (HTTP answers them with
  the response's id; stdio, which cannot answer a response, logs them), never a traceback or
  -32603: a forged id is the client's mistake.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as core

from mcp_server.protocol.core import relay, tasks
from mcp_server.protocol.core.context import Services
from mcp_server.protocol.frame.errors import McpError, from_task_error
from mcp_server.protocol.frame.routing_headers import HeaderSource
from mcp_server.protocol.v2025 import mrtr
from mcp_server.protocol.v2025.request_context import context_2025
from mcp_server.tasks.errors import TaskNotFound
from mcp_tasks.identity import Identity

log = logging.getLogger("mcp_server.protocol.v2025.client_responses")


async def route(
    services: Services,
    message: dict[str, Any],
    request_id: str | int | None,
    *,
    principal: str,
    identity: Identity,
    capabilities: core.ClientCapabilities,
    version: str,
    headers: HeaderSource,
) -> McpError | None:
    """Route the response `message` (id `request_id`) from `principal` to the task it answers,
    or to the call of this process that asked it up front (mrtr.py). Returns the refusal
    the sender should get (rate limited, task not found), else None."""
    if mrtr.resolve(services, request_id, message):
        return None
    routed = relay.parse_input_request_id(request_id)
    if routed is not None:
        try:
            services.limits.rates.updates.take(principal)
        except McpError as limited:
            return limited
    result = message.get("result")
    if routed is None or not isinstance(result, dict):
        if "error" in message:
            log.info("client declined input request %s: %s", request_id, message["error"])
        return None
    task_id, key = routed
    ctx = context_2025(
        str(request_id),
        "tasks/update",
        principal,
        headers,
        version=version,
        capabilities=capabilities,
        identity=identity,
    )
    answer = {k: v for k, v in result.items() if k != "_meta"}
    try:
        snapshot = await tasks.lookup(ctx, services, task_id)
        await tasks.submit_answers(ctx, services, snapshot, {key: answer})
    except TaskNotFound as missing:
        return from_task_error(missing)
    except McpError as error:
        log.info("answer to %s not delivered: %s", request_id, error.message)
        services.relays.refused.record(task_id, key, error.message)
    return None
