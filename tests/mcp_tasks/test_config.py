"""Settings: every `MCP_TASKS_*` value is validated once, and a bad one is named in one line."""

from __future__ import annotations

import os
import subprocess

import pytest

from mcp_tasks.settings import ConfigError, Settings
from tests.dev_process import MCP_TASKS


def test_settings_without_arguments_are_the_defaults() -> None:
    settings = Settings()
    assert (settings.host, settings.port, settings.auth) == ("127.0.0.1", 8000, "none")
    assert settings.jwt_algorithms == ("RS256", "ES256")
    assert Settings.from_env({}) == settings


def test_booleans_and_comma_separated_lists_are_read_as_before() -> None:
    env = {
        "MCP_TASKS_TLS": " Yes ",
        "MCP_TASKS_INSECURE": "off",
        "MCP_TASKS_TOOL_MODULES": "a.b, c ,,",
        "MCP_TASKS_JWT_ALGORITHMS": "ES256",
    }
    settings = Settings.from_env(env)
    assert (settings.tls, settings.insecure) == (True, False)
    assert settings.tool_modules == ("a.b", "c")
    assert settings.jwt_algorithms == ("ES256",)


def test_a_flag_overrides_the_environment_and_a_flag_of_none_does_not() -> None:
    env = {"MCP_TASKS_PORT": "9001", "MCP_TASKS_HOST": "0.0.0.0"}
    settings = Settings.from_env(env, port=9002, host=None)
    assert (settings.port, settings.host) == (9002, "0.0.0.0")


def test_a_bad_flag_overrides_a_good_variable_and_is_named_by_its_setting() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"MCP_TASKS_PORT": "9001"}, port=0)
    assert str(raised.value) == "port=0: must be at least 1"


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("MCP_TASKS_PORT", "eighty", "must be an integer"),
        ("MCP_TASKS_PORT", "0", "must be at least 1"),
        ("MCP_TASKS_PORT", "65536", "must be at most 65535"),
        ("MCP_TASKS_MAX_BODY_BYTES", "0", "must be at least 1"),
        ("MCP_TASKS_MAX_OPEN_TASKS_PER_PRINCIPAL", "-1", "must be at least 0"),
        ("MCP_TASKS_JWT_LEEWAY_S", "1.5", "must be an integer"),
        ("MCP_TASKS_AUTH", "oauth", "must be one of 'none', 'tokens' or 'jwt'"),
        ("MCP_TASKS_JWT_ALGORITHMS", "RS256,none", "must never hold 'none'"),
        ("MCP_TASKS_JWT_ALGORITHMS", "RS256, NONE", "must never hold 'none'"),
        ("MCP_TASKS_JWT_ALGORITHMS", " , ", "needs at least one signing algorithm"),
        ("MCP_TASKS_TLS", "ture", "must be a boolean"),
    ],
)
def test_a_bad_variable_is_a_config_error_naming_the_variable_the_value_and_the_problem(
    variable: str, value: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({variable: value})
    message = str(raised.value)
    assert message.startswith(f"{variable}={value!r}: ")
    assert problem in message
    assert "\n" not in message


def test_every_bad_variable_is_reported_in_one_line() -> None:
    env = {"MCP_TASKS_PORT": "x", "MCP_TASKS_AUTH": "basic"}
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env)
    assert str(raised.value) == (
        "MCP_TASKS_PORT='x': must be an integer; "
        "MCP_TASKS_AUTH='basic': must be one of 'none', 'tokens' or 'jwt'"
    )


def test_limits_of_zero_mean_none_where_zero_makes_sense() -> None:
    env = {"MCP_TASKS_MAX_OPEN_TASKS_PER_PRINCIPAL": "0", "MCP_TASKS_MAX_CACHED_WORKFLOWS": "0"}
    settings = Settings.from_env(env)
    assert (settings.max_open_tasks_per_principal, settings.max_cached_workflows) == (0, 0)


def test_with_returns_a_validated_copy_and_leaves_the_original_alone() -> None:
    original = Settings()
    changed = original.with_(port=9000, allowed_hosts=("a",))
    assert (changed.port, changed.allowed_hosts, original.port) == (9000, ("a",), 8000)
    with pytest.raises(ConfigError, match=r"^port=70000: must be at most 65535$"):
        original.with_(port=70000)
    with pytest.raises(ConfigError, match=r"^prot: is not a setting$"):
        original.with_(prot=9000)


def test_settings_are_immutable() -> None:
    with pytest.raises(ValueError, match="frozen"):
        Settings().port = 1


def test_the_cli_prints_one_line_naming_a_bad_variable_and_exits_1() -> None:
    env = {**os.environ, "MCP_TASKS_PORT": "eighty"}
    done = subprocess.run(
        [MCP_TASKS, "server"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 1
    assert done.stderr == "mcp-tasks: MCP_TASKS_PORT='eighty': must be an integer\n"
