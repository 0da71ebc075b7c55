"""The attack: `Content-Type` was checked by substring, so any type that merely contains
`application/json` passed (`application/jsonx`, `text/plain; application/json`). Now the media
type is parsed exactly (mcp_server/http/media_type.py); everything else is the existing 415
"Content-Type must be application/json"."""

from __future__ import annotations

import pytest

from mcp_server.http.media_type import is_json
from mcp_server.protocol.frame.errors import INVALID_REQUEST
from tests.asgi_stack import AsgiStack
from tests.http.test_transport import raw_post

REFUSED = [
    "application/jsonx",
    "text/plain; application/json",
    "text/plain;application/json",
    "application/json, text/plain",
    "application/json-seq",
    "xapplication/json",
    "application/json; charset=latin-1",
    "application/json; charset",
    "application/json;;",
    "application/json; a=b c",
    "",
]
ACCEPTED = [
    "application/json",
    "Application/JSON",
    "application/json; charset=utf-8",
    "application/json;charset=UTF-8",
    'application/json; charset="utf-8"',
    "application/json ; profile=x",  # RFC 9110 allows whitespace around ';'
]


@pytest.mark.parametrize("value", REFUSED)
def test_a_type_that_only_contains_application_json_is_not_json(value: str) -> None:
    assert not is_json([value])


@pytest.mark.parametrize("value", ACCEPTED)
def test_application_json_with_parameters_is_json(value: str) -> None:
    assert is_json([value])


def test_two_content_type_headers_are_not_one_json_body() -> None:
    assert not is_json(["application/json", "application/json"])
    assert not is_json([])


@pytest.mark.parametrize("value", ["application/jsonx", "text/plain; application/json"])
async def test_the_server_refuses_a_lookalike_content_type_with_415(
    asgi_stack: AsgiStack, value: str
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = await raw_post(asgi_stack, body, {"Mcp-Method": "tools/list", "Content-Type": value})
    assert response.status_code == 415
    error = response.json()["error"]
    assert error["code"] == INVALID_REQUEST
    assert error["message"] == "Content-Type must be application/json"
