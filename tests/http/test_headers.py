"""Header value decoding (SEP-2243), below the HTTP layer."""

from __future__ import annotations

import pytest

from mcp_server.protocol.frame import errors
from mcp_server.protocol.frame.errors import McpError
from mcp_server.protocol.frame.routing_headers import check_param_headers, decode_value


def test_optional_whitespace_around_a_value_is_dropped() -> None:
    assert decode_value("  greet \t", "Mcp-Name") == "greet"


def test_a_base64_value_is_decoded_as_utf8() -> None:
    assert decode_value("=?base64?w6lsw6h2ZQ==?=", "Mcp-Name") == "élève"


@pytest.mark.parametrize(
    "value", ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?/w==?="]
)
def test_bad_padding_alphabet_or_utf8_is_a_header_mismatch(value: str) -> None:
    with pytest.raises(McpError) as caught:
        decode_value(value, "Mcp-Param-X")
    assert caught.value.code == errors.HEADER_MISMATCH


@pytest.mark.parametrize("value", ["SGVsbG8=", "=?base64?SGVsbG8="])
def test_values_without_the_full_sentinel_are_literal(value: str) -> None:
    assert decode_value(value, "Mcp-Param-X") == value


class Headers:
    def __init__(self, values: dict[str, list[str]]) -> None:
        self.values = values

    def getlist(self, key: str) -> list[str]:
        return self.values.get(key.lower(), [])


def test_integer_arguments_compare_numerically() -> None:
    check_param_headers(Headers({"mcp-param-count": ["42.0"]}), {"count": "Count"}, {"count": 42})


def test_a_duplicated_param_header_is_a_mismatch() -> None:
    with pytest.raises(McpError) as caught:
        check_param_headers(Headers({"mcp-param-r": ["a", "a"]}), {"r": "R"}, {"r": "a"})
    assert caught.value.code == errors.HEADER_MISMATCH
