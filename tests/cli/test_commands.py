"""The layout of the command line (exactdp/cli/): one module per command under
``exactdp.cli.commands``, no import cycle inside the package, and no ``_`` name taken by one
of its modules from another (a helper two modules need is public inside the package)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Optional

import pytest

CLI = Path(__file__).resolve().parents[2] / "exactdp" / "cli"


def _modules(root: Path) -> dict[str, Path]:
    """``exactdp.cli...`` dotted name -> file, for every module under ``root`` (exactdp/cli)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = ["exactdp", "cli", *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, str]]:
    """``(module imported, name taken)`` for every relative import of ``path`` (at any depth,
    function-level imports included) that lands inside the package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = package.split(".")
        target = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
        for alias in node.names:
            submodule = f"{target}.{alias.name}"
            found.append((submodule if submodule in modules else target, alias.name))
    return [(t, n) for t, n in found if t in modules and t != name]


def private_crossings(root: Path) -> list[str]:
    modules = _modules(root)
    return [f"{name} takes {taken} from {target}" for name, path in modules.items()
            for target, taken in _imports(name, path, modules) if taken.startswith("_")]


def import_cycle(root: Path) -> Optional[list[str]]:
    """One cycle of imports among the modules under ``root``, or None."""
    modules = _modules(root)
    graph = {name: sorted({t for t, _ in _imports(name, path, modules)}) for name, path in modules.items()}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> Optional[list[str]]:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                return trail[trail.index(nxt):] + [node, nxt] if nxt in trail else [node, nxt]
            if nxt not in state and (cycle := visit(nxt, trail + [node])):
                return cycle
        state[node] = 2
        return None

    for node in graph:
        if node not in state and (cycle := visit(node, [])):
            return cycle
    return None


def test_cli_modules_import_no_private_name_from_each_other():
    assert len(_modules(CLI)) > 10  # the walk saw the package
    assert private_crossings(CLI) == []


def test_cli_has_no_import_cycle():
    assert import_cycle(CLI) is None


def test_the_layout_checks_can_fail(tmp_path):
    """Negative control: two modules importing each other, one taking a ``_`` name."""
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from .b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import _y\n")
    assert import_cycle(tmp_path) == ["exactdp.cli.a", "exactdp.cli.b", "exactdp.cli.a"]
    assert private_crossings(tmp_path) == ["exactdp.cli.b takes _y from exactdp.cli.a"]


#: The commands that take a mechanism, in the order of ``exactdp --help``.
MECHANISM_COMMANDS = ["dist", "levels", "prob", "sample", "audit", "certify", "explain"]


def test_the_commands_are_those_of_the_help():
    from exactdp.cli.commands import COMMANDS

    assert list(COMMANDS) == MECHANISM_COMMANDS


@pytest.mark.parametrize("name", MECHANISM_COMMANDS)
def test_every_command_is_one_module_of_commands(name):
    from exactdp.cli.commands import COMMANDS
    from exactdp.cli.options import Command

    module = importlib.import_module(f"exactdp.cli.commands.{name}")
    command = COMMANDS[name]
    assert isinstance(command, Command) and command.name == name
    assert module.COMMAND is command and command.run is module.run


@pytest.mark.parametrize("name", ["check", "compare"])
def test_the_commands_without_a_mechanism_build_their_own_parsers(name):
    from exactdp.cli.commands import COMMANDS

    module = importlib.import_module(f"exactdp.cli.commands.{name}")
    assert callable(module.add_parser) and callable(module.run)
    assert name not in COMMANDS
