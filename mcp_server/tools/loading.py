"""Building the tool registry a process serves: a built-in toolset, the user's modules
(`--tools MODULE`, each with `register(registry)`), and the exposed workflows file when one is
configured. Kept apart from registry.py so that the toolsets, which import the registry, are
imported by nothing the registry imports.

A `--tools` entry is a module name or a file path:
- `my_tools` is looked up on the Python path, then in the working directory (as `python -m`
  would find it), so `mcp-tasks dev --tools my_tools` next to `my_tools.py` works as written;
- `./my_tools.py` or `tools/my_tools.py` (anything ending in `.py` or holding a `/`) is
  imported from that file, its folder added to the Python path.
Either way the module keeps a plain name, so the worker's workflow sandbox can import it again
by that name. A module that cannot be found, or fails while it is imported, is a
`ToolModuleError`: one line that says where it looked, or which line of the module failed.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from mcp_server.tools import exposed
from mcp_server.tools.registry import ToolRegistry
from mcp_tasks.settings import Settings

BUILTIN_TOOLSETS = {
    "demo": "mcp_server.tools.demo",
    "conformance": "mcp_server.tools.conformance",
}


class ToolModuleError(ValueError):
    """A `--tools` module that cannot be found or imported (the message is one line)."""


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or os.sep in spec


def _on_path(folder: Path) -> None:
    # Appended, not prepended: a user file never shadows an installed package of the same name.
    if str(folder) not in sys.path:
        sys.path.append(str(folder))


def _where_it_failed(err: BaseException, in_file: str | None = None) -> str:
    """` (file, line N)`: the innermost frame, or the innermost one in `in_file` (the user's
    module, when the error was raised deeper, e.g. by the registry it called)."""
    frames: list[traceback.FrameSummary] = list(traceback.extract_tb(err.__traceback__))
    if in_file is not None:
        own = [f for f in frames if Path(f.filename).resolve() == Path(in_file).resolve()]
        frames = own or frames
    return f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""


def _import_named(spec: str, name: str, looked_in: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name is not None and (name == err.name or name.startswith(f"{err.name}.")):
            raise ToolModuleError(
                f"--tools {spec}: no module named {name!r} {looked_in} "
                "(give its file, e.g. --tools ./my_tools.py, or set PYTHONPATH)"
            ) from None
        raise ToolModuleError(
            f"--tools {spec}: it imports {err.name!r}, which is not installed"
            f"{_where_it_failed(err)}"
        ) from None
    except Exception as err:
        raise ToolModuleError(
            f"--tools {spec}: importing it failed: {type(err).__name__}: {err}"
            f"{_where_it_failed(err)}"
        ) from None


def import_tool_module(spec: str) -> ModuleType:
    """The module a `--tools` entry names (see the module docstring)."""
    if _is_path(spec):
        path = Path(spec).expanduser().resolve()
        if not path.is_file() or path.suffix != ".py":
            raise ToolModuleError(f"--tools {spec}: no Python file at {path}")
        _on_path(path.parent)
        module = _import_named(spec, path.stem, f"in {path.parent}")
        found = getattr(module, "__file__", None)
        if found is None or Path(found).resolve() != path:
            raise ToolModuleError(
                f"--tools {spec}: the name {path.stem!r} is already taken by {found}; "
                "rename the file"
            )
        return module
    cwd = Path.cwd()
    _on_path(cwd)
    return _import_named(spec, spec, f"on the Python path or in {cwd}")


def load_toolsets(
    toolset: str, extra_modules: Sequence[str] = (), settings: Settings | None = None
) -> ToolRegistry:
    """Build the registry from a built-in toolset plus any user modules (`--tools MODULE`)."""
    if toolset not in BUILTIN_TOOLSETS:
        raise ValueError(f"unknown toolset {toolset!r}; choose one of {sorted(BUILTIN_TOOLSETS)}")
    registry = ToolRegistry(settings)
    modules = [importlib.import_module(BUILTIN_TOOLSETS[toolset])]
    modules += [import_tool_module(spec) for spec in extra_modules]
    for module in modules:
        register = getattr(module, "register", None)
        if not callable(register):
            raise ToolModuleError(
                f"tool module {module.__name__!r} has no register(registry) function"
            )
        try:
            register(registry)
        except ToolModuleError:
            raise
        except Exception as err:
            raise ToolModuleError(
                f"tool module {module.__name__!r}: register(registry) failed: "
                f"{type(err).__name__}: {err}{_where_it_failed(err, module.__file__)}"
            ) from None
    exposed.register_runtime(registry)
    if registry.settings.exposed_workflows_file:
        exposed.register(registry)
    return registry
