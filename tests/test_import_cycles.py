"""The cycle check of `make lint` (.ci/import_cycles.py): it finds what it must, and the
shipped packages and bench/ have no import cycle, between modules, between packages, or between
the deepest packages."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / ".ci/import_cycles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_cycles", module)
    spec.loader.exec_module(module)
    return module


def test_a_cycle_through_three_modules_is_one_component_and_a_chain_is_none() -> None:
    found = checker().strongly_connected(
        {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"d"}}
    )
    assert found == [["a", "b", "c"]]
    assert checker().strongly_connected({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_modules_fold_into_their_packages_so_a_package_cycle_shows_without_a_module_one() -> None:
    module = checker()
    edges = {
        "p": set(),
        "p.x": {"q.y"},
        "q": set(),
        "q.y": set(),
        "q.z": {"p.w"},
        "p.w": set(),
    }
    assert module.strongly_connected(edges) == []
    assert module.strongly_connected(module.folded(edges)) == [["p", "q"]]


def test_a_package_whose_own_modules_stand_above_and_below_its_sub_package_is_a_pair() -> None:
    module = checker()
    edges = {
        "r": set(),
        "r.p": set(),
        "r.p.top": {"r.p.sub.x"},
        "r.p.bottom": set(),
        "r.p.sub": set(),
        "r.p.sub.x": {"r.p.bottom"},
    }
    assert module.strongly_connected(module.folded(edges)) == []  # all of it is `r.p` there
    deepest = module.folded_deepest(edges)
    assert deepest["r.p"] == {"r.p.sub"} and deepest["r.p.sub"] == {"r.p"}
    assert module.two_way_pairs(deepest) == [("r.p", "r.p.sub")]
    assert module.strongly_connected(deepest) == [["r.p", "r.p.sub"]]


def test_the_shipped_packages_and_bench_have_no_import_cycle() -> None:
    module = checker()
    graph = module.edges(module.ROOTS)
    assert "mcp_server.protocol.dispatch" in graph  # the real graph, not an empty one
    assert "bench.load" in graph
    assert module.strongly_connected(graph) == []
    assert module.strongly_connected(module.folded(graph)) == []
    deepest = module.folded_deepest(graph)
    assert module.strongly_connected(deepest) == []
    assert module.two_way_pairs(deepest) == []
