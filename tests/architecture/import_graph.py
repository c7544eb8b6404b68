"""The import graph of a package read from its source (no import is run): every import
between its modules, wherever it stands (module level, inside a function, under
``TYPE_CHECKING``, which import-linter leaves out), the import cycles, the private (``_``)
names one module takes from another, and the longest chain of modules each importing the
next.  Shared by the layout tests (tests/architecture/test_imports.py and the packages'
own layout tests)."""

from __future__ import annotations

import ast
import pathlib
from typing import NamedTuple


class Graph(NamedTuple):
    """``modules``: dotted name -> file; ``edges``: importer -> imported modules (a
    package's ``__init__`` importing its own submodules left out: it only hands names
    on); ``private``: ``importer -> module: name`` for each ``_`` name taken from another
    module; ``top``: the edges made by module-level imports only."""

    modules: dict[str, pathlib.Path]
    edges: dict[str, set[str]]
    private: list[str]
    top: dict[str, set[str]]


def read(root: pathlib.Path, package: str) -> Graph:
    """The graph of ``package`` whose folder is ``root / package``."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    edges: dict[str, set[str]] = {m: set() for m in modules}
    top: dict[str, set[str]] = {m: set() for m in modules}
    private = []

    def owner(name: str) -> str | None:  # the longest prefix that is a module
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        nested = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.If))
                  and (not isinstance(f, ast.If) or "TYPE_CHECKING" in ast.unparse(f.test))
                  for n in ast.walk(f) if n is not f}
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == package]
            elif isinstance(node, ast.ImportFrom):
                base = name.split(".") if is_package else name.split(".")[:-1]
                source = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else (node.module or "")
                if source.split(".")[0] != package:
                    continue
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    if full in modules:
                        targets.append((full, None))
                    else:
                        targets.append((source, alias.name))
            for target, imported in targets:
                module = owner(target)
                if module is None or module == name or (is_package and module.startswith(name + ".")):
                    continue
                edges[name].add(module)
                if id(node) not in nested:
                    top[name].add(module)
                if imported and imported.startswith("_") and not imported.startswith("__"):
                    private.append(f"{name} -> {module}: {imported}")
    return Graph(modules, edges, private, top)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(edges):
        if v not in index:
            visit(v)
    return found


def longest_chain(edges: dict[str, set[str]]) -> list[str]:
    """The longest chain of modules each importing the next (the graph has no cycle)."""
    memo: dict[str, list[str]] = {}

    def chain(v: str) -> list[str]:
        if v not in memo:
            memo[v] = [v] + max((chain(w) for w in edges.get(v, ())), key=len, default=[])
        return memo[v]

    return max((chain(v) for v in edges), key=len, default=[])
