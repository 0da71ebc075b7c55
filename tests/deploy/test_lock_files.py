"""requirements/*.txt stay the lock of pyproject.toml: every requirement it declares is pinned,
hash-checked, at a version it allows (a dependency added or raised without `make lock` fails
here, before `make install --require-hashes` or the image would), and the image's runtime
lock agrees with the dev lock the tests run on."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# What each lock holds (the Makefile's `lock` target).
LOCKS = {"runtime.txt": (), "dev.txt": ("dev", "docs", "otel")}
# Python 3.11 on Linux: where `make install`, CI and the image install the locks.
ENVIRONMENT = {"python_version": "3.11", "sys_platform": "linux", "platform_system": "Linux"}


def pins(lock: str) -> dict[str, tuple[str, int]]:
    """name -> (pinned version, how many hashes it carries)."""
    text = (ROOT / "requirements" / lock).read_text()
    found: dict[str, tuple[str, int]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        head = re.match(r"([A-Za-z0-9._-]+)(?:\[[^\]]*\])?==([^ ;\\\n]+)", block)
        if head:
            found[canonicalize_name(head[1])] = (head[2], block.count("--hash=sha256:"))
    return found


def declared(extras: tuple[str, ...]) -> list[Requirement]:
    lines = list(PROJECT["dependencies"])
    for extra in extras:
        lines += PROJECT["optional-dependencies"][extra]
    return [Requirement(line) for line in lines]


def problems(lock: str, requirements: list[Requirement]) -> list[str]:
    """What keeps `requirements/<lock>` from being the lock of `requirements`."""
    pinned, found = pins(lock), []
    for requirement in requirements:
        if requirement.marker and not requirement.marker.evaluate(ENVIRONMENT):
            continue
        name = canonicalize_name(requirement.name)
        if name not in pinned:
            found.append(f"{requirement} is not in requirements/{lock}")
            continue
        version, hashes = pinned[name]
        if not requirement.specifier.contains(version, prereleases=True):
            found.append(f"requirements/{lock} pins {name}=={version}, not {requirement}")
        if not hashes:
            found.append(f"{name} has no hash in requirements/{lock}")
    return found


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_declared_requirement_is_pinned_with_hashes_at_an_allowed_version(lock: str) -> None:
    assert pins(lock), f"requirements/{lock} pins nothing"
    assert problems(lock, declared(LOCKS[lock])) == [], "run `make lock`"


def test_a_requirement_the_lock_does_not_satisfy_is_reported() -> None:
    version, _ = pins("runtime.txt")["temporalio"]
    stale = [Requirement(f"temporalio>{version}"), Requirement("no-such-package>=1")]
    assert problems("runtime.txt", stale) == [
        f"requirements/runtime.txt pins temporalio=={version}, not temporalio>{version}",
        "no-such-package>=1 is not in requirements/runtime.txt",
    ]


def test_the_image_runs_the_versions_the_tests_run_on() -> None:
    runtime, dev = pins("runtime.txt"), pins("dev.txt")
    assert {name: pin[0] for name, pin in runtime.items()} == {
        name: dev[name][0] for name in runtime
    }
