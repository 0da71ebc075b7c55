"""A scripted Anthropic Messages API on 127.0.0.1, in place of Claude Code's model.

Claude Code (tests/clients/test_claude_code.py) runs offline with `ANTHROPIC_BASE_URL` pointing
here. What it sends, as seen with 2.1.332: `POST /v1/messages?beta=true`, streamed (SSE), for
the conversation (with `tools`, MCP tools named `mcp__<server>__<tool>`) and for side requests
of its own (a title for the session, ...), which carry no MCP tool. Only the conversation
follows the script; every other request gets a short text.

The script is one tool call: the first conversation turn answers with a `tool_use` of
`tool` with `arguments`; every turn after that call's `tool_result` answers with `final_text`
(the result itself, and the notification of a background task's completion). Claude Code
connects to MCP servers while its prompt is already open: a turn whose tools lack `tool` yet
(they offer `WaitForMcpServers` instead) calls that tool first, as a model would. Every request
is kept (`requests`) so a test can say what the host sent.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-scripted"
WAIT_FOR_SERVERS = "WaitForMcpServers"


@dataclass
class Script:
    tool: str
    arguments: dict[str, Any]
    final_text: str
    tool_use_id: str = field(default_factory=lambda: f"toolu_{uuid.uuid4().hex[:24]}")
    wait_id: str = field(default_factory=lambda: f"toolu_{uuid.uuid4().hex[:24]}")


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]


class MessagesApi:
    """The server: `url` for ANTHROPIC_BASE_URL, `script` set per conversation."""

    def __init__(self) -> None:
        self.script: Script | None = None
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the requests are kept, not logged

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self.reply_json(404, {"type": "error", "error": {"type": "not_found_error"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"unparsed": raw.decode(errors="replace")}
                with api.lock:
                    api.requests.append(Recorded(self.path, body))
                route = self.path.split("?", 1)[0]
                if route == "/v1/messages/count_tokens":
                    self.reply_json(200, {"input_tokens": 100})
                elif route == "/v1/messages":
                    content = api.answer(body)
                    if body.get("stream"):
                        self.reply_stream(content)
                    else:
                        self.reply_json(200, message(content, stop_reason(content)))
                else:
                    self.reply_json(404, {"type": "error", "error": {"type": "not_found_error"}})

            def reply_json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def reply_stream(self, content: list[dict[str, Any]]) -> None:
                data = b"".join(
                    f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                    for event in stream_events(content)
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks of the reply to one request."""
        script = self.script
        tools = {tool.get("name") for tool in body.get("tools") or []}
        if script is None or not tools:
            return [{"type": "text", "text": "Scripted."}]
        if tool_result(body, script.tool_use_id) is not None:
            return [{"type": "text", "text": script.final_text}]
        if script.tool in tools:
            return [tool_use(script.tool_use_id, script.tool, script.arguments)]
        if WAIT_FOR_SERVERS in tools and tool_result(body, script.wait_id) is None:
            return [tool_use(script.wait_id, WAIT_FOR_SERVERS, {})]
        return [{"type": "text", "text": f"No tool {script.tool} to call."}]

    def call_result(self) -> str | None:
        """The result of the scripted call as the model got it (its text), once it did."""
        with self.lock:
            requests = list(self.requests)
        for request in requests:
            if self.script is not None:
                result = tool_result(request.body, self.script.tool_use_id)
                if result is not None:
                    return result
        return None

    def last_messages(self) -> list[str]:
        """The text of each request's last message (a prompt, a tool result, a notification)."""
        with self.lock:
            return [text_of(request.body.get("messages") or [{}]) for request in self.requests]


def tool_use(use_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": arguments}


def tool_result(body: dict[str, Any], tool_use_id: str) -> str | None:
    """The text of the result of call `tool_use_id` in the request's messages, if there."""
    for msg in body.get("messages") or []:
        content = msg.get("content")
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                    return block_text(block)
    return None


def block_text(block: dict[str, Any]) -> str:
    """A text block's text, or a tool result's content (a string or text blocks)."""
    inner = block.get("text", block.get("content", ""))
    if isinstance(inner, list):
        return " ".join(str(part.get("text", "")) for part in inner)
    return str(inner)


def text_of(messages: list[dict[str, Any]]) -> str:
    """The text of the last message: its text blocks and tool results, in order."""
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content
    return "\n".join(block_text(block) for block in content or [])


def stop_reason(content: list[dict[str, Any]]) -> str:
    return "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn"


def message(content: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def stream_events(content: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The SSE events of a streamed reply: start, each block's start, delta and stop, end."""
    yield {"type": "message_start", "message": message([], None)}
    for index, block in enumerate(content):
        if block["type"] == "text":
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "input": {}},
            }
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield {"type": "content_block_delta", "index": index, "delta": delta}
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(content), "stop_sequence": None},
        "usage": {"output_tokens": 10},
    }
    yield {"type": "message_stop"}


@contextmanager
def messages_api() -> Iterator[MessagesApi]:
    """The server, serving from a thread of its own until the block ends."""
    api = MessagesApi()
    thread = threading.Thread(target=api.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()
        thread.join(timeout=10)
