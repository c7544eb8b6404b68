"""docs/architecture.md stays true to the tree: its layer list is pyproject.toml's layers
contract, it names every import-linter contract, every top-level module and subpackage of
exactdp, every module of exactdp/core and of the mechanism families, and every folder of
tests/, and every path it names exists.  (Its worked example runs in tests/test_docs.py.)"""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _contracts() -> list[dict]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


def layer_block(text: str) -> list[set[str]]:
    """The layers shown in the page's ``text`` block right after "## Layers", top first
    (modules of one layer separated by ``|``)."""
    section = text.split("## Layers", 1)[1]
    block = re.search(r"```text\n(.*?)\n```", section, re.S)
    assert block, "no ```text block of layers in the Layers section"
    return [{m.strip() for m in line.split("|")} for line in block.group(1).splitlines()]


def contract_layers() -> list[set[str]]:
    """The package's layers contract (the one named "layers: ..."; the mechanism families
    have a layers contract of their own inside ``exactdp.mechanisms``)."""
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers" and c["name"].startswith("layers:")]
    return [{m.strip() for m in layer.split(":")} for layer in layers]


def test_the_layer_list_is_the_layers_contract():
    assert layer_block(_page()) == contract_layers()


def test_the_layer_check_can_fail():
    text = _page()
    swapped = text.replace("exactdp.rules\nexactdp.core\n", "exactdp.core\nexactdp.rules\n", 1)
    assert swapped != text and layer_block(swapped) != contract_layers()


def test_every_contract_is_named():
    missing = [c["name"] for c in _contracts() if f"`{c['name']}`" not in _page()]
    assert not missing, f"docs/architecture.md does not describe these import-linter contracts: {missing}"


def _table_paths(text: str) -> set[str]:
    """The paths in the first column of the page's table (a cell may hold several)."""
    return {p for row in re.findall(r"^\| (`[^|]*`) \|", text, re.M) for p in re.findall(r"`([^`]+)`", row)}


def _modules(folder: pathlib.Path) -> set[str]:
    """Modules and packages directly in ``folder``, as paths from the root (``__init__``
    aside: the package's own row covers it)."""
    found = {p for p in folder.glob("*.py") if p.name != "__init__.py"}
    found |= {p for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    return {p.relative_to(ROOT).as_posix() + ("/" if p.is_dir() else "") for p in found}


def test_the_table_names_every_module_of_the_package_of_core_and_of_the_mechanisms():
    named = _table_paths(_page())
    mechanisms = ROOT / "exactdp" / "mechanisms"
    families = [p for p in mechanisms.iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
    expected = _modules(ROOT / "exactdp") | _modules(ROOT / "exactdp" / "core") | {"proofs_checks/", "tests/"}
    expected |= _modules(mechanisms).union(*(_modules(family) for family in families))  # every family, every module
    missing = sorted(expected - named)
    assert not missing, f"docs/architecture.md's table has no row for {missing}"


def test_every_path_the_page_names_exists():
    text = _page()
    named = _table_paths(text) | set(re.findall(r"`((?:exactdp|tests|proofs_checks|docs|benchmarks)/[\w./]*)`", text))
    absent = sorted(p for p in named if not (ROOT / p).exists())
    assert not absent, f"docs/architecture.md names paths that do not exist: {absent}"


def test_the_tests_section_names_every_test_folder():
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    section = _page().split("## Tests", 1)[1].split("\n## ", 1)[0]
    missing = sorted(f for f in folders if f"`tests/{f}`" not in section)
    assert not missing, f"the Tests section of docs/architecture.md does not name tests/{missing}"


def test_the_how_to_names_the_hooks_of_the_base_class():
    from exactdp.core.mechanism import Mechanism

    hooks = {"_compute_levels", "_utility", "_unrank"}
    assert hooks <= Mechanism.__abstractmethods__ | set(vars(Mechanism))
    section = _page().split("## The model", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{hook}`" in section for hook in hooks | {"output_kind", "rule", "scale"})
    declared = {"groups_rule", "counts_pairs", "pair_cells", "pair_count_declined", "pair_head"}
    assert declared <= set(vars(Mechanism)) and all(re.search(f"`{hook}[`(]", section) for hook in declared)
    assert "`LevelTableLike`" in section


def test_the_how_to_places_a_mechanism_in_three_places():
    import exactdp

    section = _page().split("## How to add a mechanism", 1)[1]
    assert "in three places and no more" in section and "`CATALOG`" in section
    assert "CATALOG" in vars(exactdp) and "exactdp.CATALOG" in (ROOT / "exactdp" / "cli" / "registry.py").read_text()
    assert "exactdp.CATALOG" in (ROOT / "tests" / "mechanisms" / "test_api_contract.py").read_text()
