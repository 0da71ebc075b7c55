"""mkdocs hook: the reference pages, generated from the code at every build so they cannot drift.

- `reference/settings.md`: every field of `Settings` (mcp_tasks/settings.py) as its
  `MCP_TASKS_*` variable, type, default and the comment written next to it;
- `reference/errors.md`: every error code constant of the protocol layer
  (mcp_server/protocol/frame/errors.py) with its value and the comment above it;
- `reference/cli.md`: `mcp-tasks --help` and the help of every subcommand, from the parser;
- `reference/modules.md`: every module of the shipped packages, layer by layer in the order of
  the import contracts (pyproject.toml), with the first line of its docstring.

tests/docs/test_docs_reference.py holds the pages to the code (a setting or a code missing fails
it).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "mcp_tasks" / "settings.py"
ERRORS = ROOT / "mcp_server" / "protocol" / "frame" / "errors.py"
_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*")
_CODE = re.compile(r"-?\d+|[A-Z][A-Z0-9_]*")
PAGES = (
    "reference/settings.md",
    "reference/errors.md",
    "reference/cli.md",
    "reference/modules.md",
)
# The packages the wheel ships, top layer first (pyproject.toml [tool.importlinter]).
SHIPPED = ("mcp_server", "workflows", "activities", "mcp_tasks")


def _comments_above(lines: list[str], lineno: int) -> str:
    """The `#` comment lines right above line `lineno` (1-based), joined, plus a trailing one."""
    found: list[str] = []
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith("#"):
        found.insert(0, lines[index].strip().lstrip("#").strip())
        index -= 1
    own = lines[lineno - 1]
    if "#" in own and not own.strip().startswith("#"):
        found.append(own.split("#", 1)[1].strip())
    return " ".join(found)


def _default(source: str, value: ast.expr | None) -> str:
    """The default a field's declaration gives (`Field(default=...)` read through)."""
    if value is None:
        return ""
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Field":
        for keyword in value.keywords:
            if keyword.arg == "default":
                return ast.get_source_segment(source, keyword.value) or ""
    return ast.get_source_segment(source, value) or ""


def _class_fields(source: str, class_name: str) -> list[tuple[str, str, str, str]]:
    """(name, type, default, description) of each annotated field of `class_name`, in order.
    A field's description is the comment right above it (or at its end of line)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    fields: list[tuple[str, str, str, str]] = []
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        comment = _comments_above(lines, node.lineno)
        kind = ast.get_source_segment(source, node.annotation) or ""
        fields.append((node.target.id, kind, _default(source, node.value), comment))
    return fields


def setting_fields() -> list[tuple[str, str, str, str]]:
    """Every field of `Settings`: (name, type, default, description)."""
    return [f for f in _class_fields(CONFIG.read_text(), "Settings") if f[0] != "model_config"]


_READ_DIRECTLY = re.compile(r'os\.environ\.get\(\s*"(MCP_TASKS_[A-Z0-9_]+)"(?:,\s*([^)]*))?\)')


def variables_read_directly() -> dict[str, tuple[str, str]]:
    """`MCP_TASKS_*` variables the code reads itself, outside `Settings`: variable ->
    (default, the module that reads it)."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(p for package in SHIPPED for p in (ROOT / package).rglob("*.py")):
        for name, default in _READ_DIRECTLY.findall(path.read_text()):
            found.setdefault(name, (default.strip() or "None", str(path.relative_to(ROOT))))
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_page() -> str:
    rows = [
        "# Settings",
        "",
        "Every setting is an environment variable (`MCP_TASKS_` and the name in capitals); the",
        "commands' flags (`--port`, `--auth`, ...) win over it. Every value is checked before",
        "anything starts, and a bad one stops the process with one line naming the variable.",
        "Booleans are `1/true/yes/on` or `0/false/no/off`; lists are comma-separated.",
        "This page is generated from `Settings` in `mcp_tasks/settings.py`.",
        "",
        "| variable | type | default | what it is |",
        "|---|---|---|---|",
    ]
    for name, kind, default, comment in setting_fields():
        variable = f"MCP_TASKS_{name.upper()}"
        rows.append(f"| `{variable}` | `{_cell(kind)}` | `{_cell(default)}` | {_cell(comment)} |")
    rows += [
        "",
        "Read by the process itself, outside `Settings`:",
        "",
        "| variable | default | read by |",
        "|---|---|---|",
    ]
    for variable, (default, module) in variables_read_directly().items():
        if variable.removeprefix("MCP_TASKS_").lower() in {f[0] for f in setting_fields()}:
            continue
        rows.append(f"| `{variable}` | `{_cell(default)}` | `{module}` |")
    return "\n".join(rows) + "\n"


def error_codes() -> list[tuple[str, str, str]]:
    """(constant, value, comment) of each module-level error code in protocol/frame/errors.py."""
    source = ERRORS.read_text()
    lines = source.splitlines()
    codes = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not (isinstance(target, ast.Name) and _CONSTANT.fullmatch(target.id)):
            continue
        value = ast.get_source_segment(source, node.value) or ""
        if not _CODE.fullmatch(value):
            continue
        codes.append((target.id, value, _comments_above(lines, node.lineno)))
    return codes


def errors_page() -> str:
    rows = [
        "# Error codes",
        "",
        "The JSON-RPC error codes this server answers with. `-32700..-32600` are JSON-RPC's,",
        "`-32020..-32022` the MCP specification's; `-31000` and below are this server's own,",
        "outside the ranges JSON-RPC and MCP reserve. A rate-limited or overloaded answer carries",
        "`data.retryAfterMs` (and HTTP `Retry-After`). This page is generated from",
        "`mcp_server/protocol/frame/errors.py`.",
        "",
        "| name | code | when |",
        "|---|---|---|",
    ]
    values = {name: value for name, value, _ in error_codes()}
    for name, value, comment in error_codes():
        shown = values.get(value, value)  # an alias shows the code it stands for
        alias = f" (same as `{value}`)" if value in values else ""
        rows.append(f"| `{name}` | `{shown}`{alias} | {_cell(comment)} |")
    return "\n".join(rows) + "\n"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse exposes its subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help_sections(parser: argparse.ArgumentParser, path: list[str]) -> list[str]:
    out = [f"## `{' '.join(path)}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in _subparsers(parser).items():
        out += _help_sections(sub, [*path, name])
    return out


def cli_page() -> str:
    from mcp_server.runtime.cli import _parser

    with contextlib.redirect_stdout(io.StringIO()):
        parser = _parser()
    parser.prog = "mcp-tasks"
    lines = [
        "# Command line",
        "",
        "Every command and its flags, as `--help` prints them (generated from the parser in",
        "`mcp_server/runtime/cli.py`). Settings not given as flags come from the environment:",
        "see [Settings](settings.md).",
        "",
    ]
    return "\n".join(lines + _help_sections(parser, ["mcp-tasks"]))


def layers() -> list[tuple[str, list[str]]]:
    """Each shipped package, top first, with its own layers, top first (`a | b`: siblings), as
    the layers contracts of pyproject.toml list them; [] for a package without one."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    inner = {
        contract["containers"][0]: list(contract["layers"])
        for contract in config["contracts"]
        if contract["type"] == "layers" and contract.get("containers")
    }
    (top,) = [
        c["layers"]
        for c in config["contracts"]
        if c["type"] == "layers" and not c.get("containers")
    ]
    return [(package, inner.get(package, [])) for package in top]


def _summary(path: Path) -> str:
    """The first line (sentence) of a module's docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return doc.split("\n\n", 1)[0].replace("\n", " ").strip()


def _module_rows(folder: Path) -> list[str]:
    rows = []
    for path in sorted(folder.glob("*.py")):
        if path.name != "__init__.py":
            name = str(path.relative_to(ROOT))
            rows.append(f"| `{name}` | {_cell(_summary(path))} |")
    return rows


def _package_sections(folder: Path) -> list[str]:
    """A table of the modules of `folder`, then one per package inside it, recursively."""
    lines: list[str] = []
    rows = _module_rows(folder)
    if rows:
        title = str(folder.relative_to(ROOT)) + "/"
        lines += [f"### `{title}`", "", "| module | what it is |", "|---|---|", *rows, ""]
    for sub in sorted(p for p in folder.iterdir() if (p / "__init__.py").exists()):
        lines += _package_sections(sub)
    return lines


def modules_page() -> str:
    lines = [
        "# Modules",
        "",
        "Every module of the shipped packages, generated from the code at every build: the",
        "packages in the order of their layers (top first; a layer imports only the layers below",
        "it, and `make lint` holds them to it), then each module with the first line of its",
        "docstring. [Layout](../contributing/layout.md) says why the layers are in this order.",
        "",
    ]
    for package, inner in layers():
        lines += [f"## `{package}/`", ""]
        if not inner:
            lines += _package_sections(ROOT / package)
            continue
        lines += ["Its layers, top first: " + " > ".join(f"`{layer}`" for layer in inner), ""]
        rows = _module_rows(ROOT / package)
        if rows:
            lines += [f"### `{package}/`", "", "| module | what it is |", "|---|---|", *rows, ""]
        for layer in inner:
            for name in (part.strip() for part in layer.split("|")):
                if (ROOT / package / name).is_dir():
                    lines += _package_sections(ROOT / package / name)
    return "\n".join(lines)


GENERATORS = {
    "reference/settings.md": settings_page,
    "reference/errors.md": errors_page,
    "reference/cli.md": cli_page,
    "reference/modules.md": modules_page,
}


def on_files(files: Any, config: Any) -> Any:
    """mkdocs: add the generated reference pages to the site."""
    from mkdocs.structure.files import File

    for uri, generate in GENERATORS.items():
        files.append(File.generated(config, uri, content=generate()))
    return files
