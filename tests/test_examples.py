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


def test_the_teaching_examples_exist():
    assert {p.name for p in EXAMPLES} >= {
        "plot_level_distributions.py",
        "plot_top_k_vs_epsilon.py",
        "plot_privacy_loss.py",
        "plot_utility_comparison.py",
    }


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_writes_a_png(path, tmp_path):
    out = tmp_path / f"{path.stem}.png"
    returned = _load(path).main(out)
    assert pathlib.Path(returned) == out
    data = out.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000, f"{out} is suspiciously small ({len(data)} bytes)"


# What the pictures claim, checked on the numbers they draw.

LEVELS = ROOT / "examples" / "plot_level_distributions.py"
TOP_K = ROOT / "examples" / "plot_top_k_vs_epsilon.py"


def test_the_committed_pictures_are_shown_in_the_gallery():
    gallery = (ROOT / "docs" / "gallery.md").read_text(encoding="utf-8")
    for name in (p.stem for p in EXAMPLES):
        png = ROOT / "docs" / "images" / f"{name}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC, f"{png} is missing or not a PNG"
        assert f"](images/{name}.png)" in gallery, f"docs/gallery.md does not show {name}.png"


def test_level_plot_error_is_minus_the_utility_and_its_masses_sum_to_one():
    import itertools

    import exactdp

    example = _load(LEVELS)
    k = example.K
    for counts in ([1, 10, 5, 1], [2, 2, 7, 0, 3], example.COUNTS):  # unsorted and tied ones too
        example.COUNTS = counts  # linf_error reads the module's counts
        joint, joint_set = exactdp.Joint(counts, k, epsilon=1), exactdp.JointSet(counts, k, epsilon=1)
        for seq in itertools.permutations(range(len(counts)), k):
            assert example.linf_error(seq) == -joint.utility(seq)
        for items in itertools.combinations(range(len(counts)), k):
            assert example.linf_error(frozenset(items)) == -joint_set.utility(frozenset(items))
    table = example.error_table(dps=20)
    assert [name.split(" ")[0] for name, _ in table] == ["Joint", "PNFJoint", "JointSet", "Canonical,", "peeling"]
    for name, rows in table:
        assert abs(sum(p for _, _, p in rows) - 1) < 1e-18, name
        outputs = 6 if "(sets)" in name else 12  # 4 choose 2 sets, 4 * 3 sequences
        assert sum(n for _, n, _ in rows) == outputs, name


def test_level_plot_labels_never_round_a_probability_to_zero():
    label = _load(LEVELS).probability_label
    assert label(0.00021) == "0.00021" and label(2.1e-9) == "2.1e-09" and label(0.631) == "0.63"
    assert all(float(label(p)) > 0 for p in (1e-3, 2e-4, 5e-7, 1e-30))


def test_pure_peeling_is_not_called_cdp_peel_and_cdp_peel_uses_lemma_4_2():
    from fractions import Fraction

    import mpmath

    from exactdp import accounting

    example = _load(TOP_K)
    cdp = [name for name in example.SEQUENCE_MECHANISMS if "CDP-Peel" in name]
    assert cdp == [example.CDP_PEEL] and "δ" in example.CDP_PEEL
    pure = [name for name in example.SEQUENCE_MECHANISMS if "Peel" in name and name not in cdp]
    assert pure and all("pure ε" in name for name in pure)
    for eps in (Fraction(1, 10), Fraction(1), Fraction(4)):
        round_eps = example.cdp_peel_round_epsilon(eps)
        # below the certified inverse of Lemma 4.2, so the (eps, delta) claim holds (the gap,
        # about 1e-15 relative, is far above the 1e-30 certified error) ...
        with mpmath.workdps(40):
            target = mpmath.mpf(eps.numerator) / eps.denominator
        assert accounting.cdp_peel_epsilon(round_eps, example.DELTA, example.K, dps=30) < target
        # ... and only just (the rational is within 1e-14 of it)
        assert accounting.cdp_peel_round_epsilon(eps, example.DELTA, example.K, dps=30) - round_eps < 1e-14
        assert example.SEQUENCE_MECHANISMS[example.CDP_PEEL](eps).epsilon == example.K * round_eps


def test_level_plot_docstring_compares_its_peeling_with_cdp_peel_truly():
    # the docstring said CDP-Peel "spends more per round"; at this example's k and epsilon
    # Lemma 4.2's per-round epsilon is below epsilon/k (dp_topk then runs this very peeling)
    from fractions import Fraction

    from exactdp import accounting

    example = _load(LEVELS)
    round_eps = accounting.cdp_peel_round_epsilon(example.EPSILON, Fraction(1, 10**6), example.K, dps=20)
    assert abs(round_eps - 0.264) < 5e-4 and round_eps * example.K < example.EPSILON
    assert "spends more per round" not in example.__doc__ and "about 0.264" in example.__doc__
