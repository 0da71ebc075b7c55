"""Fail on any import cycle between modules or between packages of the shipped code and of
bench/.

Run by `make lint` (after the import-linter contracts in pyproject.toml). The graph comes from
grimp, import-linter's own graph library, and counts every import: at module level, inside
functions, and under `if TYPE_CHECKING:`. A cycle is a strongly connected component of more
than one node, found with Tarjan's algorithm:

- between modules: `a` imports `b` and `b` (maybe through others) imports `a`;
- between packages: the same with every module folded into the package the layer contracts
  name (`mcp_server.http`, `mcp_server.protocol` with all it holds, `mcp_tasks.contracts`,
  `workflows`, ...), so `protocol -> http -> protocol` counts even when no two modules form a
  cycle;
- between the deepest packages: every module folded into the innermost package that holds it
  (`mcp_server.protocol.core.tasks` into `mcp_server.protocol.core`, `mcp_server.protocol.tools`
  into `mcp_server.protocol`), so a package whose own modules stand both above and below one
  of its sub-packages (`protocol -> protocol.v2026 -> protocol`) fails too. Two packages that
  import each other are named as a pair.

    python .ci/import_cycles.py          # prints the components, exits 1 if there is any
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp

# This checkout's packages, whatever the virtualenv's editable install points at.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOTS = ("mcp_tasks", "workflows", "activities", "mcp_server", "bench")


def package_of(module: str, packages: set[str]) -> str:
    """The package a module belongs to, as the layer contracts name packages: a package of the
    root (`mcp_server.http`, `mcp_tasks.contracts`, with whatever it holds), else the root."""
    parts = module.split(".")
    package = ".".join(parts[:2])
    return package if len(parts) > 1 and package in packages else parts[0]


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (a deep import chain must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def edges(roots: Iterable[str]) -> dict[str, set[str]]:
    """Every import between modules of `roots`, including lazy and type-only ones."""
    present = [root for root in roots if _importable(root)]
    graph = grimp.build_graph(*present, include_external_packages=False)
    return {
        module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules
    }


def folded(module_edges: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The same graph with each module replaced by its package; self-loops dropped."""
    names = {module.rsplit(".", 1)[0] for module in module_edges if "." in module} | {
        module for module in module_edges if any(m.startswith(module + ".") for m in module_edges)
    }
    packages: dict[str, set[str]] = {}
    for module, imported in module_edges.items():
        source = package_of(module, names)
        targets = packages.setdefault(source, set())
        targets.update(package_of(i, names) for i in imported)
        targets.discard(source)
    return packages


def packages_of(module_edges: Mapping[str, set[str]]) -> set[str]:
    """The modules that are packages (another module's name starts with theirs and a dot)."""
    return {module.rsplit(".", 1)[0] for module in module_edges if "." in module}


def deepest_package(module: str, packages: set[str]) -> str:
    """The innermost package holding `module` (a package is its own)."""
    while module not in packages and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


def folded_deepest(module_edges: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The graph with each module replaced by its deepest package; self-loops dropped."""
    names = packages_of(module_edges)
    packages: dict[str, set[str]] = {}
    for module, imported in module_edges.items():
        source = deepest_package(module, names)
        targets = packages.setdefault(source, set())
        targets.update(deepest_package(i, names) for i in imported)
        targets.discard(source)
    return packages


def two_way_pairs(graph: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """Every pair of nodes that import each other, directly."""
    return sorted(
        (a, b) for a, targets in graph.items() for b in targets if a < b and a in graph.get(b, ())
    )


def _importable(root: str) -> bool:
    return importlib.util.find_spec(root) is not None


def main() -> int:
    module_edges = edges(ROOTS)
    deepest = folded_deepest(module_edges)
    failed = False
    for label, graph in (
        ("module", module_edges),
        ("package", folded(module_edges)),
        ("deepest package", deepest),
    ):
        components = strongly_connected(graph)
        print(f"{label} cycles: {len(components)}", end="")
        print(f" ({sum(len(c) for c in components)} {label}s in them)" if components else "")
        for component in components:
            print("  " + " <-> ".join(component))
        failed = failed or bool(components)
    pairs = two_way_pairs(deepest)
    print(f"two-way package pairs: {len(pairs)}")
    for a, b in pairs:
        print(f"  {a} <-> {b}")
    return 1 if failed or pairs else 0


if __name__ == "__main__":
    sys.exit(main())
