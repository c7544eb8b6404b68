"""The package's import graph (docs/architecture.md, "Layers"): no import cycle anywhere,
counting the imports made inside functions and under ``TYPE_CHECKING`` (which
import-linter leaves out), and no module importing a private (``_``) name of another.
Each check also runs on a probe package where it must fail."""

from __future__ import annotations

import functools
import pathlib

from tests.architecture.import_graph import Graph, cycles, longest_chain, read

ROOT = pathlib.Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=None)
def _package() -> Graph:
    return read(ROOT, "exactdp")  # parsed once for both checks


def test_no_import_cycle_anywhere_in_the_package():
    assert cycles(_package().edges) == []


def test_no_private_name_crosses_modules():
    assert _package().private == []


def _probe(tmp_path: pathlib.Path) -> pathlib.Path:
    package = tmp_path / "probe"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import a\n", encoding="utf-8")
    (package / "a.py").write_text("from .inner.b import _helper\n", encoding="utf-8")
    (package / "inner" / "__init__.py").write_text("", encoding="utf-8")
    (package / "inner" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import C\n\n"
        "def _helper():\n    return 1\n", encoding="utf-8")
    (package / "c.py").write_text("def f():\n    from .a import g\n    return g\n", encoding="utf-8")
    return tmp_path


def test_the_checks_can_fail(tmp_path):
    graph = read(_probe(tmp_path), "probe")
    # a -> inner.b (module level), inner.b -> c (TYPE_CHECKING), c -> a (in a function)
    assert cycles(graph.edges) == [["probe.a", "probe.c", "probe.inner.b"]]
    assert graph.private == ["probe.a -> probe.inner.b: _helper"]
    assert graph.top == {"probe": set(), "probe.a": {"probe.inner.b"}, "probe.c": set(), "probe.inner": set(),
                         "probe.inner.b": set()}


def test_longest_chain_follows_the_imports(tmp_path):
    graph = read(_probe(tmp_path), "probe")
    assert longest_chain(graph.top) == ["probe.a", "probe.inner.b"]
