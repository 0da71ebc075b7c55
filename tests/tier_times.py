"""Each tier's share of a `make test` run: the time of its tests (setup, call and teardown)
summed from a JUnit XML report, each test put in its tier by the markers pytest collects.

    PYTHONPATH=$PWD .venv/bin/pytest -n 3 -o junit_duration_report=total --junitxml=run.xml
    PYTHONPATH=$PWD .venv/bin/python -m tests.tier_times run.xml

The tiers are those of docs/contributing/tests.md, a test in the first one whose marker it
carries; the sums are of three processes side by side, so a tier's share of the wall-clock run
is its sum over the total of all.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

# Most specific first: a conformance test also starts a stack, so it is also `e2e`.
TIERS = ("conformance", "clients", "browser", "slow", "time_skipping", "e2e")
FAST = "fast (pure, in-process, socket)"


class _Tiers:
    """A pytest plugin that notes each collected test's tier."""

    def __init__(self) -> None:
        self.of: dict[str, str] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            marks = {mark.name for mark in item.iter_markers()}
            self.of[item.nodeid] = next((t for t in TIERS if t in marks), FAST)


def tiers_of_tests() -> dict[str, str]:
    plugin = _Tiers()
    pytest.main(["--collect-only", "-q", "-p", "no:xdist", "-p", "no:cacheprovider"], [plugin])
    return plugin.of


def node_id(case: ET.Element) -> str:
    """The pytest node id of a JUnit test case (module tests: no classes in this suite)."""
    return f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name', '')}"


def main(report: str) -> None:
    tiers = tiers_of_tests()
    seconds: dict[str, float] = {}
    tests: Counter[str] = Counter()
    for case in ET.parse(report).getroot().iter("testcase"):
        tier = tiers.get(node_id(case), "not collected now")
        seconds[tier] = seconds.get(tier, 0.0) + float(case.get("time", "0"))
        tests[tier] += 1
    total = sum(seconds.values())
    print(f"{'tier':34} {'tests':>6} {'seconds':>9} {'share':>6}")
    for tier, spent in sorted(seconds.items(), key=lambda pair: -pair[1]):
        print(f"{tier:34} {tests[tier]:6} {spent:9.0f} {spent / total:6.0%}")
    print(f"{'all':34} {sum(tests.values()):6} {total:9.0f}")


if __name__ == "__main__":
    main(sys.argv[1])
