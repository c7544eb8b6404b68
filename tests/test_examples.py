"""The teaching examples in examples/ (plot_*.py) run headless and write a valid PNG."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

# The teaching examples need the optional extra `plot` (matplotlib): without it the module
# is skipped with a reason instead of failing at collection.
pytest.importorskip("matplotlib", reason="the teaching examples need matplotlib (pip install 'exactdp[plot]')")

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_three_teaching_examples_exist():
    assert {p.name for p in EXAMPLES} >= {
        "plot_level_distributions.py",
        "plot_top_k_vs_epsilon.py",
        "plot_privacy_loss.py",
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_writes_a_png(path, tmp_path):
    out = tmp_path / f"{path.stem}.png"
    returned = _load(path).main(out)
    assert pathlib.Path(returned) == out
    data = out.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000, f"{out} is suspiciously small ({len(data)} bytes)"
