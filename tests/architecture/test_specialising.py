"""One declared way to specialise a mechanism, and one declaration of the mechanisms.

- No layer dispatches on mechanism classes with ``isinstance`` (utility, teaching, the
  oracle): they ask hooks declared on Mechanism, or read one registry keyed by class.
- ``exactdp.CATALOG`` is the one declaration of the mechanisms: the lazy public names, the
  command line's registry and the API contract test read it.
- No import cycle in core, counting the imports made for type checkers only.
"""

from __future__ import annotations

import ast
import pathlib

from tests.architecture.import_graph import cycles as strongly_connected

import exactdp
from exactdp.cli.registry import MECHANISMS

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "exactdp"


def _isinstance_on_mechanisms(path: pathlib.Path) -> list[str]:
    """``isinstance(x, C)`` calls in ``path`` whose class argument names a mechanism class."""
    names = set(exactdp.CATALOG) | {"JointFamily", "CanonicalFamily"}
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            classes = node.args[1] if len(node.args) > 1 else None
            named = {n.id for n in ast.walk(classes) if isinstance(n, ast.Name)} if classes is not None else set()
            if named & names:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
    return found


def test_no_isinstance_dispatch_on_mechanism_classes():
    files = [PACKAGE / "utility.py", *(PACKAGE / "teaching").glob("*.py"), *(PACKAGE / "_oracle").rglob("*.py")]
    found = [hit for path in files for hit in _isinstance_on_mechanisms(path)]
    assert not found, found


def test_the_dispatch_probe_can_fail(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f(m):\n    return isinstance(m, (Joint, int)) or isinstance(m, str)\n", encoding="utf-8")
    assert len(_isinstance_on_mechanisms(probe)) == 1


def test_one_declaration_of_the_mechanisms():
    commands = [command for _, command, _ in exactdp.CATALOG.values()]
    assert list(MECHANISMS) == commands
    for name, (family, command, summary) in exactdp.CATALOG.items():
        cls = getattr(exactdp, name)
        assert MECHANISMS[command].factory is cls and MECHANISMS[command].summary == summary
        assert f"{cls.__module__}.".startswith(f"exactdp.mechanisms.{family}.")
        assert issubclass(cls, exactdp.Mechanism) and name in exactdp.__all__


def _imports(path: pathlib.Path, module: str) -> set[str]:
    """Modules of exactdp.core that ``path`` imports, type-checking imports included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = module.split(".")[: len(module.split(".")) - node.level]
            target = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{target}.{a.name}" for a in node.names} | {target}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("exactdp.core.")}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    return strongly_connected(graph)


def _core_graph(root: pathlib.Path) -> dict[str, set[str]]:
    modules = {f"exactdp.core.{p.stem}": p for p in (root / "exactdp" / "core").glob("*.py") if p.stem != "__init__"}
    return {m: {t for t in _imports(p, m) if t in modules and t != m} for m, p in modules.items()}


def test_core_has_no_import_cycle_even_through_type_checking_imports():
    assert _cycles(_core_graph(ROOT)) == []


def test_the_cycle_probe_can_fail():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = _core_graph(ROOT)
    assert "exactdp.core.levels" in graph["exactdp.core.level_blocks"]  # the probe sees relative imports
