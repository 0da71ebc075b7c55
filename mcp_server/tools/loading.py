"""Building the tool registry a process serves: a built-in toolset, the user's modules
(`--tools MODULE`, each with `register(registry)`), and the exposed workflows file when one is
configured. Kept apart from registry.py so that the toolsets, which import the registry, are
imported by nothing the registry imports."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from mcp_server.runtime.config import Settings
from mcp_server.tools import exposed
from mcp_server.tools.registry import ToolRegistry

BUILTIN_TOOLSETS = {
    "demo": "mcp_server.tools.demo",
    "conformance": "mcp_server.tools.conformance",
}


def load_toolsets(
    toolset: str, extra_modules: Sequence[str] = (), settings: Settings | None = None
) -> ToolRegistry:
    """Build the registry from a built-in toolset plus any user modules (`--tools MODULE`)."""
    if toolset not in BUILTIN_TOOLSETS:
        raise ValueError(f"unknown toolset {toolset!r}; choose one of {sorted(BUILTIN_TOOLSETS)}")
    registry = ToolRegistry(settings)
    for module_name in (BUILTIN_TOOLSETS[toolset], *extra_modules):
        module = importlib.import_module(module_name)
        register = getattr(module, "register", None)
        if not callable(register):
            raise ValueError(f"tool module {module_name!r} has no register(registry) function")
        register(registry)
    if registry.settings.exposed_workflows_file:
        exposed.register(registry)
    return registry
