"""`--tools`: a module name is found on the Python path or in the working directory, a file path
is imported from its file, and every failure is one line that says where it looked or what
line of the module failed (mcp_server/tools/loading.py)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server.tools.loading import ToolModuleError, import_tool_module, load_toolsets

TOOL_MODULE = """
from mcp_server.tools.registry import Tool, ToolRegistry


async def _hello(call):
    return {"content": [{"type": "text", "text": "hello"}]}


def register(registry: ToolRegistry) -> None:
    registry.add(Tool("hello_{name}", "Says hello.", {"type": "object"}, handler=_hello))
"""


@pytest.fixture
def fresh_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory of its own; sys.path and sys.modules are restored afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def unique_name() -> str:
    return f"user_tools_{uuid.uuid4().hex[:8]}"


def test_a_module_name_is_found_in_the_working_directory(fresh_dir: Path) -> None:
    name = unique_name()
    (fresh_dir / f"{name}.py").write_text(TOOL_MODULE.replace("{name}", name))
    registry = load_toolsets("demo", [name])
    assert registry.get(f"hello_{name}") is not None


def test_a_file_path_is_imported_from_its_file(fresh_dir: Path) -> None:
    name = unique_name()
    folder = fresh_dir / "team"
    folder.mkdir()
    (folder / f"{name}.py").write_text(TOOL_MODULE.replace("{name}", name))
    module = import_tool_module(f"team/{name}.py")
    assert module.__name__ == name  # a plain name the worker's sandbox can import again
    assert Path(module.__file__ or "").resolve() == (folder / f"{name}.py").resolve()


def test_a_missing_module_says_where_it_looked_in_one_line(fresh_dir: Path) -> None:
    with pytest.raises(ToolModuleError) as caught:
        import_tool_module("no_such_tools")
    message = str(caught.value)
    assert "\n" not in message
    assert "no module named 'no_such_tools'" in message and str(fresh_dir) in message
    assert "--tools ./my_tools.py" in message


def test_a_missing_file_names_the_path_it_tried(fresh_dir: Path) -> None:
    with pytest.raises(ToolModuleError, match=r"no Python file at .*nope\.py"):
        import_tool_module("./nope.py")


def test_a_dependency_the_module_imports_is_named_with_the_line(fresh_dir: Path) -> None:
    name = unique_name()
    (fresh_dir / f"{name}.py").write_text("import os\nimport not_installed_anywhere_x\n")
    with pytest.raises(ToolModuleError) as caught:
        import_tool_module(name)
    assert "'not_installed_anywhere_x', which is not installed" in str(caught.value)
    assert f"{name}.py, line 2" in str(caught.value)


def test_an_error_while_importing_names_its_line(fresh_dir: Path) -> None:
    name = unique_name()
    (fresh_dir / f"{name}.py").write_text("x = 1\nraise RuntimeError('bad config')\n")
    with pytest.raises(ToolModuleError) as caught:
        import_tool_module(f"{name}.py")
    assert "RuntimeError: bad config" in str(caught.value)
    assert f"{name}.py, line 2" in str(caught.value)


def test_a_module_without_register_is_refused_by_name(fresh_dir: Path) -> None:
    name = unique_name()
    (fresh_dir / f"{name}.py").write_text("x = 1\n")
    with pytest.raises(ToolModuleError, match="has no register"):
        load_toolsets("demo", [name])


def test_a_file_whose_name_an_installed_module_takes_is_refused(fresh_dir: Path) -> None:
    (fresh_dir / "json.py").write_text(TOOL_MODULE.replace("{name}", "json"))
    with pytest.raises(ToolModuleError, match="already taken"):
        import_tool_module("./json.py")


def test_a_register_that_fails_names_the_module_its_line_and_the_error(fresh_dir: Path) -> None:
    name = unique_name()
    body = "def register(registry):\n    x = 1\n    raise KeyError('region')\n"
    (fresh_dir / f"{name}.py").write_text(body)
    with pytest.raises(ToolModuleError) as caught:
        load_toolsets("demo", [name])
    message = str(caught.value)
    assert "\n" not in message and f"tool module {name!r}: register(registry) failed" in message
    assert "KeyError: 'region'" in message and f"{name}.py, line 3" in message


def test_a_refusal_of_the_registry_names_the_line_of_the_module_that_caused_it(
    fresh_dir: Path,
) -> None:
    """The registry raises deeper down: the line named is the module's own call."""
    name = unique_name()
    twice = TOOL_MODULE.replace("{name}", name) + "    registry.add(Tool('hello_" + name
    twice += "', 'Again.', {'type': 'object'}, handler=_hello))\n"
    (fresh_dir / f"{name}.py").write_text(twice)
    with pytest.raises(ToolModuleError) as caught:
        load_toolsets("demo", [name])
    assert "registered twice" in str(caught.value)
    assert f"{name}.py, line 11" in str(caught.value)
