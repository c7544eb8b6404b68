"""The mechanism families as packages (docs/architecture.md): the tests mirror their modules,
no module of ``exactdp.mechanisms`` imports a private (``_``) name of another, and their
imports form no cycle, counting the imports made inside functions and under
``TYPE_CHECKING`` (which import-linter leaves out).  Each check runs on the tree and on a
probe where it must fail."""

from __future__ import annotations

import ast
import pathlib

from tests.architecture.import_graph import cycles as strongly_connected

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "exactdp" / "mechanisms"


def _modules() -> dict[str, ast.Module]:
    """Dotted name (under exactdp.mechanisms, the package itself "") -> parsed source."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def _is_package(name: str) -> bool:
    return (PACKAGE / name.replace(".", "/") / "__init__.py").is_file() if name else True


def _target(importer: str, node: ast.ImportFrom) -> str | None:
    """The module of exactdp.mechanisms that ``from ... import`` in ``importer`` names, else None."""
    if node.level == 0:
        prefix = "exactdp.mechanisms"
        if node.module != prefix and not (node.module or "").startswith(prefix + "."):
            return None
        return (node.module or "")[len(prefix) + 1:]
    base = importer.split(".") if _is_package(importer) and importer else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    if node.level - 1 > len(importer.split(".")) - (0 if _is_package(importer) else 1):
        return None  # above exactdp.mechanisms: core, rules, errors
    return ".".join([*base, *(node.module.split(".") if node.module else [])])


def _edges(modules: dict[str, ast.Module]) -> list[tuple[str, str, list[str]]]:
    """(importer, imported module, names taken), every ``from`` import between modules of
    exactdp.mechanisms, wherever it stands (top level, function, TYPE_CHECKING block)."""
    edges = []
    for name, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _target(name, node)
                if target is None:
                    continue
                names = [alias.name for alias in node.names]
                if target in modules and not (_is_package(target) and all(f"{target}.{n}".strip(".") in modules for n in names)):
                    edges.append((name, target, names))
                else:  # `from . import sweep`: the submodules themselves
                    edges += [(name, f"{target}.{n}".strip("."), []) for n in names if f"{target}.{n}".strip(".") in modules]
    return edges


def private_imports(modules: dict[str, ast.Module]) -> list[str]:
    """``importer -> module: name`` for every ``_`` name imported from another module of
    the package, and every ``module._name`` read through an imported module."""
    found = [f"{a} -> {b}: {n}" for a, b, names in _edges(modules) for n in names
             if n.startswith("_") and not n.startswith("__")]
    for name, tree in modules.items():
        aliases = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   and (target := _target(name, node)) is not None for alias in node.names
                   if f"{target}.{alias.name}".strip(".") in modules}
        found += [f"{name} -> {node.value.id}: {node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in aliases and node.attr.startswith("_") and not node.attr.startswith("__")]
    return found


def cycles(edges: list[tuple[str, str, list[str]]]) -> list[list[str]]:
    """The import cycles (strongly connected components of more than one module, or a module
    importing itself), each sorted; a package's ``__init__`` re-exports are left out."""
    graph: dict[str, set[str]] = {}
    for a, b, _ in edges:
        if _is_package(a) and b.startswith(a + ".") or a == "":
            continue  # a package's face hands on what its modules define
        graph.setdefault(a, set()).add(b)
    return strongly_connected(graph)


def test_no_private_name_crosses_a_module_of_the_mechanisms():
    assert private_imports(_modules()) == []


def test_the_private_name_check_can_fail():
    modules = _modules()
    modules["peeling.mechanism"].body.append(ast.parse("from .sampling import _CHUNK").body[0])
    modules["joint.blocks"].body.append(ast.parse("from . import sweep as joint_sweep\nx = joint_sweep._KEY_LIMIT"))
    found = private_imports(modules)
    assert "peeling.mechanism -> peeling.sampling: _CHUNK" in found
    assert "joint.blocks -> joint_sweep: _KEY_LIMIT" in found


def test_the_mechanisms_import_no_cycle():
    assert cycles(_edges(_modules())) == []


def test_the_cycle_check_can_fail():
    modules = _modules()
    # an import under TYPE_CHECKING, as joint_unrank once named Joint, still closes a cycle
    modules["joint.unrank"].body.append(ast.parse("if TYPE_CHECKING:\n    from .mechanism import Joint").body[0])
    modules["joint_set.pairs"].body.append(ast.parse("def f():\n    from .mechanism import JointSet").body[0])
    found = cycles(_edges(modules))
    assert ["joint.mechanism", "joint.unrank"] in found and ["joint_set.mechanism", "joint_set.pairs"] in found


def mirror_gaps(tests: pathlib.Path) -> list[str]:
    """Modules of the families (and set_marginal) without ``test_<module>.py`` beside the
    family's other tests (``tests/mechanisms/<family>/``)."""
    wanted = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if path.name != "__init__.py":
            wanted.append(pathlib.Path(*parts[:-1], f"test_{path.stem}.py"))
    return [str(p) for p in wanted if not (tests / p).is_file()]


def test_the_tests_mirror_the_mechanism_modules():
    assert mirror_gaps(ROOT / "tests" / "mechanisms") == []


def test_the_mirror_check_can_fail(tmp_path):
    assert "joint/test_sweep.py" in mirror_gaps(tmp_path)
    assert "test_set_marginal.py" in mirror_gaps(tmp_path)
