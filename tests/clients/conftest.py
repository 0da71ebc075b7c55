"""The real-client tier needs the client libraries of tests/clients/requirements.txt
(`make client-deps`; `make test` and `make test-fast` install them). Without them the modules
that import them are left out of collection, named in the header, instead of failing it: a
plain `pytest -m "not clients"` after `make install` collects cleanly."""

from __future__ import annotations

from importlib.util import find_spec

NEEDS = {
    "test_fastmcp.py": "fastmcp",
    "test_python_sdk.py": "mcp",
    "test_python_sdk_follow.py": "mcp",
}
MISSING = sorted({lib for lib in NEEDS.values() if find_spec(lib) is None})
collect_ignore = [module for module, lib in NEEDS.items() if lib in MISSING]


def pytest_report_header() -> str | None:
    if not collect_ignore:
        return None
    return (
        f"tests/clients: {', '.join(collect_ignore)} left out, {', '.join(MISSING)} not "
        "installed (make client-deps)"
    )
