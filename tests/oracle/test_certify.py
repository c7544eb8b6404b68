"""Tests of exactdp.certify, of `exactdp certify`, and of the example float64 Joint
(examples/float_joint.py) that the certification passes, and of its broken variant that it
catches."""

from __future__ import annotations

import json
import math
import random
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp import certify
from exactdp._oracle.groups import Groups
from exactdp.certify import alternative, chi2, design as certify_design
from exactdp.core.formatting import number_text
from exactdp.cli import main
from exactdp.errors import InvalidParameterError, NothingToDetectError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import BrokenFloatJoint, FloatJoint  # noqa: E402

from twins import brute_probabilities_base, mp_probabilities_eps  # noqa: E402

SMALL = ([10, 5, 1, 1], 2)
EXAMPLE = ([4, 3, 3, 1, 0], 2)  # the instance of the float example (20 sequences, 5 levels)


def float_distribution(counts, k, epsilon=1):
    return {o: float(p) for o, p in mp_probabilities_eps(counts, k, Fraction(epsilon), 30).items()}


# ---------------------------------------------------------------------------------------
# compare_probabilities


def test_compare_exact_floats_pass():
    m = exactdp.Joint(*SMALL, epsilon=1)
    claimed = float_distribution(*SMALL)
    r = certify.compare_probabilities(claimed, m)
    assert r.passed and r.failures == 0 and r.n_outputs == 12 and not r.missing
    assert r.max_rel_error < 1e-15
    assert abs(r.claimed_total - 1) < 1e-15
    logs = {o: math.log(p) for o, p in claimed.items()}
    assert certify.compare_probabilities(logs, m, log=True).passed
    # a callable over every output
    assert certify.compare_probabilities(lambda o: claimed[o], m).passed


def test_compare_detects_and_ranks_errors():
    m = exactdp.Joint(*SMALL, epsilon=1)
    claimed = float_distribution(*SMALL)
    claimed[(3, 2)] *= 1 + 1e-6
    claimed[(2, 0)] *= 1 + 1e-8
    r = certify.compare_probabilities(claimed, m)
    assert not r.passed and r.failures == 2
    assert [row.output for row in r.worst[:2]] == [(3, 2), (2, 0)]
    assert r.worst[0].rel_error == pytest.approx(1e-6, rel=1e-6)
    assert r.worst[0].level == 3 and not r.worst[0].ok
    assert "FAIL" in str(r) and "(3,2)" in r.table()
    # within a loose tolerance it passes
    assert certify.compare_probabilities(claimed, m, rtol=1e-5).passed


def test_compare_missing_and_impossible_outputs():
    m = exactdp.Joint(*SMALL, epsilon=1)
    claimed = float_distribution(*SMALL)
    del claimed[(3, 2)], claimed[(2, 3)]
    r = certify.compare_probabilities(claimed, m)
    assert not r.passed and r.missing == {3: 2} and r.failures == 2
    assert r.worst[0].output is None and "2 outputs not claimed" in r.worst[0].note
    # only the listed outputs
    assert certify.compare_probabilities(claimed, m, outputs=list(claimed)).passed
    joint_set = getattr(exactdp, "JointSet", None)
    if joint_set is not None:  # sets: (0, 1) and (1, 0) name the same output
        with pytest.raises(InvalidParameterError, match="same output twice"):
            certify.compare_probabilities({(0, 1): 0.5, (1, 0): 0.5}, joint_set(*SMALL))


def test_compare_rational_base_exact():
    counts, k, base = [5, 3, 3, 0], 2, Fraction(1, 2)
    m = exactdp.Joint(counts, k, base=base)
    exact = brute_probabilities_base(counts, k, base)
    # Fractions converted with 30+ digits: no error above 1e-28 (and decided exactly at rtol = atol = 0)
    r = certify.compare_probabilities(exact, m, rtol=0, atol=1e-28)
    assert r.passed and r.max_abs_error < 1e-28


def test_compare_exact_claims_exactly_at_zero_tolerance():
    # exact rational claims equal to the exact probabilities pass with rtol = atol = 0
    # (they failed: the certified values differ from them by ~10**-30), and a claim off
    # by 10**-45 still fails; floats are taken at their exact binary value
    counts, k, base = [5, 3, 3, 0], 2, Fraction(3, 10)
    m = exactdp.Joint(counts, k, base=base)
    exact = brute_probabilities_base(counts, k, base)
    for claimed in (exact, {o: str(p) for o, p in exact.items()}, lambda o: exact[o]):
        r = certify.compare_probabilities(claimed, m, rtol=0, atol=0)
        assert r.verdict == "pass", r
    off = dict(exact)
    o = next(iter(off))
    off[o] += Fraction(1, 10**45)
    r = certify.compare_probabilities(off, m, rtol=0, atol=0)
    assert r.verdict == "fail" and r.failures == 1 and r.worst[0].output == o
    assert certify.compare_probabilities(off, m, rtol=0, atol=1e-44).verdict == "pass"
    floats = {o: float(p) for o, p in exact.items()}
    wrong = sum(Fraction(f) != exact[o] for o, f in floats.items())
    assert certify.compare_probabilities(floats, m, rtol=0, atol=0).failures == wrong > 0


def test_compare_sympy_expressions_at_full_precision():
    # an exact symbolic table of an epsilon mechanism was rounded to floats (53 bits) and
    # failed at rtol = 1e-20; a claim off by 1e-22 still fails at 1e-25
    import sympy
    m = exactdp.Joint([3, 1, 0], 2, epsilon=1)
    claimed = {o: m.probability_exact(o) for o in m.outputs()}
    assert certify.compare_probabilities(claimed, m, rtol=1e-25).verdict == "pass"
    o = next(iter(claimed))
    off = {**claimed, o: claimed[o] * (1 + sympy.Rational(1, 10**22))}
    r = certify.compare_probabilities(off, m, rtol=1e-25)
    assert r.verdict == "fail" and r.failures == 1
    logs = {o: sympy.log(p) for o, p in claimed.items()}
    assert certify.compare_probabilities(logs, m, log=True, rtol=0, atol=1e-25).verdict == "pass"
    with pytest.raises(InvalidParameterError) as info:
        certify.compare_probabilities({**claimed, o: sympy.Symbol("p")}, m)
    assert info.value.argument == "claimed"
    # Decimals keep their digits (they were rounded to float64 too)
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 40
        decimals = {o: Decimal(str(sympy.N(p, 45))) for o, p in claimed.items()}
    assert certify.compare_probabilities(decimals, m, rtol=1e-35).verdict == "pass"


def test_compare_left_out_outputs_are_claimed_zero():
    m = exactdp.Joint(*SMALL, base=Fraction(1, 2))
    exact = brute_probabilities_base(*SMALL, Fraction(1, 2))
    rare = min(exact, key=exact.get)
    claimed = {o: p for o, p in exact.items() if o != rare}
    # left out = claimed 0: within atol >= P it passes, as an explicit 0 does
    assert certify.compare_probabilities(claimed, m, atol=float(exact[rare]) * 2).verdict == "pass"
    assert certify.compare_probabilities({**claimed, rare: 0}, m, atol=float(exact[rare]) * 2).verdict == "pass"
    r = certify.compare_probabilities(claimed, m)
    assert r.verdict == "fail" and r.failures == 1
    # an output asked for through `outputs` that the mapping leaves out is claimed 0 too
    top = max(exact, key=exact.get)
    r = certify.compare_probabilities({top: exact[top]}, m, outputs=[top, rare], min_coverage=0)
    assert r.verdict == "fail" and r.n_outputs == 2 and r.failures == 1
    assert [row.output for row in r.worst if not row.ok] == [rare] and r.worst[0].note == "not claimed"


def test_compare_mechanism_without_levels():
    # CanonicalGamma1 has no utility levels: its probability groups are its (h, t) classes,
    # so the level stage runs over classes and the within stage tests uniformity inside them
    m = exactdp.CanonicalGamma1([3, 2, 2, 0], 2, epsilon=1)
    claimed = {o: float(p) for o, p in m.distribution()}
    assert certify.compare_probabilities(claimed, m).passed
    n = certify.samples_needed(m)
    fit = certify.goodness_of_fit(m.samples(n, rng=4), m)
    assert fit.verdict == "pass" and fit.plan.untested_outputs == 0
    sizes = [g.multiplicity for g in m.groups()]
    assert fit.plan.levels == len(sizes) < m.support_size()
    assert fit.within_df == sum(s - 1 for s in sizes) > 0


# ---------------------------------------------------------------------------------------
# compare_mtilde


@pytest.mark.parametrize("counts, k", [EXAMPLE, ([5, 5, 5, 2, 1, 1, 0], 3), ([2, 2, 2, 2], 4), ([7], 1)])
def test_float_log_mtilde_certified(counts, k):
    impl = FloatJoint(counts, k)
    r = certify.compare_mtilde(impl.log_mtilde, exactdp.Joint(counts, k), rows=impl.rows, cols=impl.cols)
    assert r.passed and r.entries == len(counts) * k and r.max_abs_error < 1e-12
    assert not r.order_mismatches and r.zero_mismatches == 0


def test_compare_mtilde_catches_errors():
    counts, k = [5, 5, 5, 2, 1, 1, 0], 3
    m = exactdp.Joint(counts, k)
    impl = FloatJoint(counts, k)
    bad = impl.log_mtilde.copy()
    finite = np.flatnonzero(np.isfinite(bad))
    bad[finite[3]] += 1e-6
    r = certify.compare_mtilde(bad, m)
    assert not r.passed and r.failures == 1 and r.worst[0].position == finite[3]
    bad = impl.log_mtilde.copy()
    bad[finite[0]] = -np.inf  # claims m~ = 0 where it is not
    r = certify.compare_mtilde(bad, m)
    assert not r.passed and r.zero_mismatches == 1 and "FAIL" in str(r)
    with pytest.raises(InvalidParameterError, match="d\\*k = 21"):
        certify.compare_mtilde(bad[:-1], m)
    with pytest.raises(InvalidParameterError, match="mtilde"):
        certify.compare_mtilde(bad, object())


def test_compare_mtilde_needs_rows_and_cols_together():
    # rows without cols (or the reverse) silently skipped the order check
    huge = [10**16, 10**16, 3, 2, 1, 0]
    f = FloatJoint(huge, 2)
    m = exactdp.Joint(huge, 2)
    for kwargs, missing in ((dict(rows=f.rows), "cols"), (dict(cols=f.cols), "rows")):
        with pytest.raises(InvalidParameterError) as info:
            certify.compare_mtilde(f.log_mtilde, m, **kwargs)
        assert info.value.argument == missing
    assert certify.compare_mtilde(f.log_mtilde, m, rows=f.rows, cols=f.cols).order_mismatches


def test_float_order_breaks_near_2_to_53():
    # measured: the float diff matrix loses distinctness when |c_i - c_j| 2dk nears 2**53
    counts = [10**16, 10**16, 3, 2, 1, 0]
    impl = FloatJoint(counts, 2)
    r = certify.compare_mtilde(impl.log_mtilde, exactdp.Joint(counts, 2), rows=impl.rows, cols=impl.cols)
    assert not r.passed and r.order_mismatches


# ---------------------------------------------------------------------------------------
# chi-square machinery


def test_chi2_functions():
    assert certify.chi2_sf(3, 2) == pytest.approx(math.exp(-1.5), rel=1e-14)
    for df in (1, 4, 19):
        c = certify.chi2_isf(1e-6, df)
        assert certify.chi2_sf(c, df) == pytest.approx(1e-6, rel=1e-9)
    assert certify.chi2_sf(0, 0) == 1 and certify.chi2_sf(1, 0) == 0
    assert certify.ncx2_sf(5, 3, 0) == certify.chi2_sf(5, 3)
    rng = np.random.default_rng(3)
    for df, nc, x in [(3, 4.0, 9.0), (19, 58.0, 63.7), (1, 900.0, 1000.0)]:
        mc = float(np.mean(rng.noncentral_chisquare(df, nc, size=200_000) > x))
        assert float(certify.ncx2_sf(x, df, nc)) == pytest.approx(mc, abs=4e-3)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.floats(0, 5000), st.floats(0.01, 3))
def test_fast_noncentral_sf_against_mpmath(df, nc, where):
    # fast path (double precision, Birge tail cut) against the 30-digit Poisson mixture
    x = where * (df + nc)
    fast = chi2._ncx2_sf_fast(x, df, nc)
    slow = float(certify.ncx2_sf(x, df, nc))
    assert fast == pytest.approx(slow, rel=1e-9, abs=1e-15)


@pytest.mark.slow
def test_fast_noncentral_sf_edge_cases():
    assert chi2._ncx2_sf_fast(3.0, 1, 5e-324) == pytest.approx(float(certify.chi2_sf(3, 1)), rel=1e-12)
    assert chi2._ncx2_sf_fast(0.0, 4, 2.0) == 1.0 and chi2._ncx2_sf_fast(5.0, 0, 2.0) == 0.0
    # far tails (Birge's bounds) and the 30-digit mixture agree
    assert chi2._ncx2_sf_fast(60.0, 19, 1e6) == 1.0 and float(certify.ncx2_sf(60, 19, 1e6)) == 1.0
    assert chi2._ncx2_sf_fast(1e5, 19, 100.0) == 0.0 and float(certify.ncx2_sf(1e5, 19, 100)) < 1e-300


def test_read_samples_formats():
    assert certify.read_samples("0,1\n# c\n\n2 3\n[4, 5]\n") == [[0, 1], [2, 3], [4, 5]]
    assert certify.read_samples("[[0, 1], [1, 0]]") == [[0, 1], [1, 0]]
    for text, fragment in [("0,x\n", "line 1"), ("[0, 'a']\n", "line 1"), ("", "no draws"), ("[[0], [true]]", "integers")]:
        with pytest.raises(ValueError, match=fragment):
            certify.read_samples(text)


# ---------------------------------------------------------------------------------------
# goodness_of_fit


def test_exact_sampler_passes():
    m = exactdp.Joint(*SMALL, epsilon=1)
    fit = certify.goodness_of_fit(m.samples(8000, rng=11), m)
    assert fit.passed and fit.p_value > 1e-4 and fit.verdict == "pass"
    assert fit.df == fit.level_df + fit.within_df and fit.level_df == 3
    assert sum(b.observed for b in fit.bins if b.stage == "level") == 8000
    assert sum(b.expected for b in fit.bins if b.stage == "level") == pytest.approx(8000, rel=1e-12)
    assert "by level" in fit.summary() and "stage" in fit.table()


def test_wrong_epsilon_is_rejected():
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = exactdp.Joint(*SMALL, epsilon="1.2").samples(4000, rng=5)
    fit = certify.goodness_of_fit(draws, m)
    assert not fit.passed and fit.level_p_value < 1e-6 and fit.verdict == "fail" and fit.rejected
    assert fit.verdict_line().startswith("FAIL: the draws do not follow the exact distribution; n = 4000, ")


def test_invalid_and_impossible_draws():
    m = exactdp.Joint(*SMALL, epsilon=1)
    fit = certify.goodness_of_fit([(0, 1)] * 10 + [(0, 0), (0, 9), "ab"], m)
    assert not fit.passed_at(1e-300) and fit.p_value == 0 and len(fit.invalid) == 3
    assert "invalid draw" in fit.summary() and fit.verdict == "fail"
    assert fit.verdict_line().startswith("FAIL: 3 draws outside the support; n = 13")


def test_within_level_grouped_bins_catch_a_nonuniform_sampler():
    m = exactdp.Joint([5] + [0] * 29, 2, epsilon=1)  # levels of 29 and 841 sequences
    rng = random.Random(2)
    good = m.samples(3000, rng=rng)
    fit = certify.goodness_of_fit(good, m)
    assert not fit.rejected and fit.within_df > 20
    # 3000 draws are too few for power 0.99 at TV 0.05 with these many bins: said so
    assert fit.verdict == "inconclusive" and fit.samples_needed() > 3000
    assert fit.plan.within_grouped > 0 and f"({fit.plan.within_grouped} grouped)" in fit.verdict_line()
    assert any("outputs" in b.label and "-" in b.label for b in fit.bins if b.stage == "within")
    # right level frequencies, but within the big level only sequences avoiding items 20-29
    bad = []
    for o in good:
        if m.utility(o) == -5:  # replace items 20-29 by other zero-count items
            o = tuple(rng.choice([i for i in range(1, 20) if i not in o]) if x >= 20 else x for x in o)
            o = o if o[0] != o[1] else (o[0], 0)
        bad.append(o)
    fit_bad = certify.goodness_of_fit(bad, m)
    assert fit_bad.level_p_value > 1e-3 and fit_bad.within_p_value < 1e-6 and not fit_bad.passed
    # levels-only test cannot see it, and says how many outputs it left untested
    levels_only = certify.goodness_of_fit(bad, m, within=False)
    untested = sum(lv.multiplicity for lv in m.levels() if lv.multiplicity >= 2)
    assert not levels_only.rejected and levels_only.plan.untested_outputs == untested > 800
    assert f"within level: not tested (0 df; {untested} outputs" in levels_only.summary()
    assert f"{untested} untested" in levels_only.verdict_line()
    # too many outputs to list: grouped levels are skipped, and said so
    fit_skip = certify.goodness_of_fit(good, m, max_enumerate=100)
    assert fit_skip.skipped and "max_enumerate" in next(iter(fit_skip.skipped.values()))


# ---------------------------------------------------------------------------------------
# power


def test_power_of_the_null_is_alpha():
    m = exactdp.Joint(*EXAMPLE, epsilon=1)
    exact = {o: p for o, p in m.distribution()}
    p = certify.power(m, exact, 5000, alpha=1e-3)
    assert p.noncentrality < 1e-20 and p.power == pytest.approx(1e-3, rel=1e-6)
    assert "noncentral" in str(p)


def test_power_outside_support():
    m = exactdp.Joint(*SMALL, epsilon=1)
    alt = {o: float(q) * 0.99 for o, q in m.distribution()}
    alt[(0, 0)] = 0.01  # an impossible output
    p = certify.power(m, alt, 500, alpha=1e-6)
    assert p.outside == pytest.approx(0.01) and p.power >= 1 - 0.99**500


# ---------------------------------------------------------------------------------------
# power-aware verdicts: no PASS from a test that could not fail

SMALL_K1 = ([3, 1, 0], 1)


def _grid():
    grid, x = set(range(1, 201)), 200.0
    while x < 10**5:
        x *= 10 ** (1 / 12)
        grid.add(min(10**5, int(round(x))))
    return sorted(grid)


@pytest.mark.slow
@pytest.mark.parametrize("counts, k, output", [(*SMALL_K1, (0,)), (*SMALL_K1, (2,)), ([2, 2, 2], 2, (0, 1))])
def test_constant_sampler_failed_or_inconclusive_at_every_n(counts, k, output):
    # a constant sampler's statistic depends on n only: every n up to 200, then 12 per decade to 10^5
    m = exactdp.Joint(counts, k, epsilon=1)
    seen = set()
    for n in _grid():
        fit = certify.goodness_of_fit([output] * n, m)
        v = fit.verdict
        assert v in ("fail", "inconclusive"), (n, fit.verdict_line())
        assert (v == "inconclusive") == (not fit.rejected)
        seen.add(v)
    assert seen == {"fail", "inconclusive"}


def test_the_old_false_passes_are_now_inconclusive():
    m = exactdp.Joint(*SMALL_K1, epsilon=1)
    fit2 = certify.goodness_of_fit([(0,)] * 2, m)  # no level expects 5 draws: one bin, nothing to test
    assert fit2.df == 0 and fit2.tail is None and fit2.verdict == "inconclusive" and fit2.power() == 0
    assert fit2.verdict_line().startswith("INCONCLUSIVE: 0 degrees of freedom: this test cannot reject anything; n = 2")
    assert "levels: 3 in 1 bin (3 pooled)" in fit2.verdict_line()
    assert "TV detectable with power 0.99 at this n: none (0 df)" in fit2.verdict_line()
    assert "within level: nothing to test (0 df: every level has a single output)" in fit2.summary()
    # ten draws: level 0 is a bin, the two rare levels are the rare tail (no longer pooled with
    # level 0), tested exactly with all of alpha; still far too weak to say PASS
    fit10 = certify.goodness_of_fit([(0,)] * 10, m)
    assert fit10.df == 0 and fit10.tail.levels == (1, 2) and fit10.tail.share == 1
    assert fit10.verdict == "inconclusive" and fit10.power() == 0
    assert fit10.verdict_line().startswith("INCONCLUSIVE: not rejected, but the test is too weak to say PASS; n = 10")
    assert "levels: 3 in 1 bin (0 pooled) and 2 in the rare tail" in fit10.verdict_line()
    assert "TV detectable with power 0.99 at this n: none (0 df)" in fit10.verdict_line()
    fit30 = certify.goodness_of_fit([(0,)] * 30, m)
    assert fit30.p_value > 1e-6 and fit30.verdict == "inconclusive" and fit30.power() < 1e-3


def test_verdict_line_states_everything():
    m = exactdp.Joint(*SMALL, epsilon=1)
    fit = certify.goodness_of_fit(m.samples(3000, rng=2), m, alpha=1e-4, delta=0.08, min_power=0.9)
    line = fit.verdict_line()
    n_needed = certify.samples_needed(m, delta=0.08, target=0.9, alpha=1e-4)
    d = fit.detectable_delta()
    for part in ("n = 3000", f"chi-square {fit.statistic:.6g} on {fit.df} df", f"p-value {number_text(fit.p_value, 4)}",
                 "alpha = 0.0001", f"power {fit.power():.3g} at TV deviation 0.08 (PASS needs 0.9)",
                 f"TV detectable with power 0.9 at this n: >= {d:.3g}", f"n needed for TV 0.08: {n_needed:,}",
                 "levels: 4 in 4 bins (0 pooled); within levels: 11 outputs in 11 bins (0 grouped), 0 untested"):
        assert part in line, (part, line)
    assert line.split(":")[0] == fit.verdict.upper() and "\n" not in line
    # detectable_delta and the power agree: at delta = detectable_delta the power is min_power
    again = certify.goodness_of_fit(m.samples(3000, rng=2), m, alpha=1e-4, delta=d, min_power=0.9)
    assert again.power() == pytest.approx(0.9, abs=1e-5)


def test_bad_arguments_get_named_errors():
    # these raised bare TypeError/AttributeError/ValueError, or were accepted
    from exactdp.errors import ArgumentTypeError
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    for samples in (None, "012", 5):
        with pytest.raises(ArgumentTypeError) as info:
            certify.goodness_of_fit(samples, m)
        assert info.value.argument == "samples"
    for call in (lambda: certify.goodness_of_fit([[0]], "joint"), lambda: certify.compare_probabilities({}, 3),
                 lambda: certify.sensitivity([3, 1, 0], 100)):
        with pytest.raises(ArgumentTypeError) as info:
            call()
        assert info.value.argument == "mechanism"
    for bad in (0, -1, float("nan"), "x"):  # bins expecting ~0 draws: no valid p-value
        with pytest.raises(InvalidParameterError) as info:
            certify.goodness_of_fit([[0]] * 9, m, min_expected=bad)
        assert info.value.argument == "min_expected"
    with pytest.raises(InvalidParameterError) as info:
        certify.ncx2_sf(1, 3, float("nan"))
    assert info.value.argument == "nc"
    with pytest.raises(InvalidParameterError) as info:
        certify.chi2_sf(float("nan"), 3)
    assert info.value.argument == "x"
    with pytest.raises(InvalidParameterError) as info:
        certify.chi2_sf(1, -1)
    assert info.value.argument == "df"
    assert certify.chi2_sf(float("inf"), 3) == 0 and certify.chi2_isf(np.float32(0.5), 2) > 0
    assert certify.goodness_of_fit(iter([[0]] * 5), m).n == 5  # any iterable of draws
    for text in ("1_0,2\n", "١,2\n"):  # int() reads "1_0" as 10 and Arabic-Indic digits as ids
        with pytest.raises(ValueError, match="line 1: .* is not an item id"):
            certify.read_samples(text)
    assert certify.read_samples("-1,+2\n") == [[-1, 2]]


def test_arguments_checked():
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = [(0, 1)] * 5
    for kw, name in [({"delta": 0}, "delta"), ({"delta": 1.5}, "delta"), ({"min_power": 1}, "min_power"),
                     ({"alpha": 0}, "alpha"), ({"alpha": "x"}, "alpha")]:
        with pytest.raises(InvalidParameterError) as info:
            certify.goodness_of_fit(draws, m, **kw)
        assert info.value.argument == name
    with pytest.raises(InvalidParameterError) as info:
        certify.samples_needed(m, target=1.0)
    assert info.value.argument == "target"
    with pytest.raises(InvalidParameterError, match="min_coverage"):
        certify.compare_probabilities({}, m, min_coverage=2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=9))
def test_spread_bound_against_brute_force(weights):
    # fast path: 1/4, or p(1-p) when one bin has p >= 1/2; twin: max over every union S
    total = sum(weights)
    probs = [w / total for w in weights]
    brute = max(sum(probs[i] for i in range(len(probs)) if mask >> i & 1) *
                (1 - sum(probs[i] for i in range(len(probs)) if mask >> i & 1)) for mask in range(2 ** len(probs)))
    fast = chi2._spread(probs)
    assert brute <= fast + 1e-15
    if max(probs) >= 0.5 or any(2 * sum(w for i, w in enumerate(weights) if mask >> i & 1) == total
                               for mask in range(2 ** len(weights))):
        assert brute == pytest.approx(fast, abs=1e-15)


def _least_favourable(m, n, delta):
    """The explicit alternative of the docstring: move delta of mass into the heaviest level bin
    (or, failing a bin with p >= 1/2, into bins making up half the mass), proportionally."""
    plan = certify_design._Design(Groups(m, 30), certify_design.MIN_EXPECTED, True, 10**6).plan(n)
    probs = [float(p) for p in Groups(m, 30).group_probabilities()]
    p_bins = [sum(probs[a] for a in g) for g in plan.level_bins]
    top = max(range(len(p_bins)), key=p_bins.__getitem__)
    assert p_bins[top] >= 0.5
    factor = {}
    for b, g in enumerate(plan.level_bins):
        f = (1 + delta / p_bins[b]) if b == top else (1 - delta / (1 - p_bins[top]))
        for a in g:
            factor[a] = f
    lv = Groups(m, 30)
    return {o: float(p) * factor[a] for a, (o, p) in zip(
        (a for a, lvl in enumerate(lv.groups) for _ in range(lvl.multiplicity)), m.distribution())}


def test_least_favourable_alternative_attains_the_noncentrality():
    m = exactdp.Joint(*SMALL_K1, epsilon=1)  # one bin holds p >= 1/2: the bound is attained
    n, delta = 4000, 0.05
    alt = _least_favourable(m, n, delta)
    assert sum(alt.values()) == pytest.approx(1, abs=1e-12)
    assert sum(abs(alt[o] - float(p)) for o, p in m.distribution()) / 2 == pytest.approx(delta, rel=1e-9)
    sens = certify.sensitivity(m, n, delta=delta)
    explicit = certify.power(m, alt, n)
    assert explicit.noncentrality == pytest.approx(sens.noncentrality, rel=1e-9)
    assert explicit.power == pytest.approx(sens.power, rel=1e-9) and explicit.df == sens.plan.df
    # and the approximation is honest: simulated rejection rate of the real test
    mc = certify.power(m, alt, n, method="monte-carlo", trials=400, seed=3)
    assert mc.interval[0] - 0.05 <= sens.power <= mc.interval[1] + 0.05


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([300, 3000, 30000]))
def test_no_alternative_beats_the_least_favourable_bound(seed, n):
    # brute-force twin of the closed form: random alternatives (on outputs) have a
    # noncentrality of at least n * TV_bins**2 / V over the same bins, whatever V is attained
    m = exactdp.Joint([4, 3, 3, 1, 0], 2, epsilon=1)
    rng = np.random.default_rng(seed)
    outs = [o for o, _ in m.distribution()]
    exact = np.array([float(p) for _, p in m.distribution()])
    q = exact * np.exp(rng.normal(0, rng.uniform(0.01, 1), len(exact)))
    q /= q.sum()
    alt = dict(zip(outs, q))
    design = certify_design._Design(Groups(m, 30), certify_design.MIN_EXPECTED, True, 10**6)
    plan = design.plan(n)
    shape = design.shape(n)
    lv = Groups(m, 30)
    level_of = {o: lv.index(o) for o in outs}
    tv_bins = 0.5 * sum(abs(sum(q[i] - exact[i] for i, o in enumerate(outs) if level_of[o] in g)) for g in plan.level_bins)
    lam = certify.power(m, alt, n).noncentrality
    assert lam >= n * tv_bins**2 / shape.spread * (1 - 1e-9)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([5000, 50000]))
def test_no_within_level_alternative_beats_the_bound(seed, n):
    # deviations inside levels only (level masses kept): noncentrality >= n TV**2 / V as well
    m = exactdp.Joint([4, 3, 3, 1, 0], 2, epsilon=1)
    rng = np.random.default_rng(seed)
    lv = Groups(m, 30)
    dist = [(o, float(p)) for o, p in m.distribution()]
    level_of = [lv.index(o) for o, _ in dist]
    exact = np.array([p for _, p in dist])
    q = exact * np.exp(rng.normal(0, rng.uniform(0.01, 1), len(exact)))
    for a in set(level_of):  # rescale each level back to its exact mass
        idx = [i for i, b in enumerate(level_of) if b == a]
        q[idx] *= exact[idx].sum() / q[idx].sum()
    tv = 0.5 * np.abs(q - exact).sum()
    shape = certify_design._Design(lv, certify_design.MIN_EXPECTED, True, 10**6).shape(n)
    lam = certify.power(m, dict(zip([o for o, _ in dist], q)), n).noncentrality
    plan = certify_design._Design(lv, certify_design.MIN_EXPECTED, True, 10**6).plan(n)
    # at these n every output is its own within-level bin, so no deviation hides in a bin
    assert all(plan.within[a].mode == "outputs" for a in set(level_of) if lv.groups[a].multiplicity > 1)
    assert lam >= n * tv**2 / shape.spread * (1 - 1e-9)


def test_single_level_mechanism_uses_the_within_level_stage():
    m = exactdp.Joint([2, 2, 2], 2, epsilon=1)  # one level of 6 sequences: only uniformity is tested
    n = certify.samples_needed(m)
    fit = certify.goodness_of_fit(m.samples(n, rng=5), m)
    assert fit.level_df == 0 and fit.within_df == 5 and fit.verdict == "pass"
    assert fit.plan.spread == pytest.approx(0.25)


def test_sensitivity_matches_the_fit():
    m = exactdp.Joint(*EXAMPLE, epsilon=1)
    n = 6000
    fit = certify.goodness_of_fit(m.samples(n, rng=8), m)
    sens = certify.sensitivity(m, n)
    assert sens.plan == fit.plan and sens.power == fit.power() and sens.n_needed == fit.samples_needed()
    assert sens.detectable_delta == fit.detectable_delta() and not sens.conclusive
    assert "n needed for TV 0.05: " in str(sens)
    # the n found is where the power crosses min_power (to within 1%)
    at = certify.sensitivity(m, sens.n_needed)
    assert at.power >= 0.99 and at.conclusive
    assert certify.sensitivity(m, int(sens.n_needed * 0.98)).power < 0.99


def test_samples_needed_nothing_to_detect_at_once(monkeypatch):
    m = exactdp.Joint(*EXAMPLE, epsilon=1)
    exact = {o: float(p) for o, p in m.distribution()}
    calls = []
    original = alternative._Alternative.power
    monkeypatch.setattr(alternative._Alternative, "power", lambda self, n, a: calls.append(n) or original(self, n, a))
    with pytest.raises(NothingToDetectError) as info:
        certify.samples_needed(m, exact)
    assert info.value.argument == "alternative" and "nothing to detect" in str(info.value)
    assert isinstance(info.value, ValueError) and calls == []  # no search at all
    # a deviation only within levels is invisible to a levels-only test
    swapped = dict(exact)
    a, b = (4, 0), (4, 1)
    swapped[a], swapped[b] = exact[a] * 1.5, exact[b] * 0.5
    with pytest.raises(NothingToDetectError):
        certify.samples_needed(m, swapped, within=False)
    needed = certify.samples_needed(m, swapped)  # but the within-level stage sees it
    assert certify.power(m, swapped, needed).power >= 0.99
    # power too low even at max_n: said at once, naming max_n
    calls.clear()
    with pytest.raises(InvalidParameterError) as info:
        certify.samples_needed(m, swapped, max_n=needed // 2)
    assert info.value.argument == "max_n" and len(calls) == 1
    with pytest.raises(InvalidParameterError, match="delta"):
        certify.samples_needed(m, swapped, delta=0.1)
    # a real deviation of 1e-6 relative on two outputs is not "the same probabilities"
    # (it was NothingToDetectError): too small for max_n draws, said naming max_n
    tiny = dict(exact)
    tiny[(0, 1)] *= 1 + 1e-6
    tiny[(0, 2)] -= exact[(0, 1)] * 1e-6
    with pytest.raises(InvalidParameterError) as info:
        certify.samples_needed(m, tiny)
    assert info.value.argument == "max_n" and not isinstance(info.value, NothingToDetectError)
    # float rounding of the exact table is still nothing to detect
    rounded = {o: float(np.float64(p) * (1 + 2**-52)) for o, p in exact.items()}
    with pytest.raises(NothingToDetectError):
        certify.samples_needed(m, rounded)


def test_power_refuses_alternatives_that_are_not_distributions():
    # the sequence law given against the set marginal collapsed (0, 1) and (1, 0) to one
    # key (the last won) and counted the lost mass as "outside the support": power 1 at
    # n = 1000 against the very same distribution; an unnormalised table was scored too
    peel = exactdp.Peeling([4, 3, 3, 1, 0], 2, epsilon=2)
    sets = peel.as_sets()
    sequences = {o: float(p) for o, p in peel.distribution()}
    with pytest.raises(InvalidParameterError, match="names the same set output"):
        certify.power(sets, sequences, 1000)
    marginal = {}
    for o, p in sequences.items():
        marginal[frozenset(o)] = marginal.get(frozenset(o), 0.0) + p
    assert certify.power(sets, marginal, 1000).noncentrality < 1e-9  # summed first: the same law
    with pytest.raises(InvalidParameterError, match="sum to 0.5, not 1"):
        certify.power(sets, {o: p / 2 for o, p in marginal.items()}, 1000)
    with pytest.raises(InvalidParameterError, match="more than 1"):
        certify.samples_needed(sets, lambda o: 2 * float(sets.probability(o)))
    with pytest.raises(InvalidParameterError, match="must be >= 0"):
        certify.power(sets, {**marginal, frozenset({0, 1}): -0.1}, 1000)
    # mass outside the support, under keys that are no outputs, is still accepted
    outside = {**{o: p * 0.99 for o, p in marginal.items()}, (7, 8): 0.01}
    assert certify.power(sets, outside, 1000).power == pytest.approx(1 - 0.99 ** 1000, rel=1e-6)


def test_samples_needed_small_max_n_is_not_nothing_to_detect():
    # with max_n = 10 every level of Joint([3, 1, 0], 1) shares one bin, but more draws
    # split the bins and see this alternative: the error names max_n (it said "nothing to
    # detect, so no number of draws suffices")
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    alt = {(0,): 0.62, (1,): 0.24, (2,): 0.14}
    with pytest.raises(InvalidParameterError) as info:
        certify.samples_needed(m, alt, max_n=10)
    assert info.value.argument == "max_n" and not isinstance(info.value, NothingToDetectError)
    assert certify.samples_needed(m, alt) > 10
    with pytest.raises(NothingToDetectError):  # the same distribution: nothing, whatever max_n
        certify.samples_needed(m, {o: float(p) for o, p in m.distribution()}, max_n=10)


def test_compare_probabilities_inconclusive():
    m = exactdp.Joint(*SMALL, epsilon=1)
    claimed = float_distribution(*SMALL)
    r = certify.compare_probabilities(claimed, m, outputs=[])
    assert r.verdict == "inconclusive" and not r.passed and r.reason == "nothing was compared"
    assert str(r).startswith("INCONCLUSIVE: nothing was compared; 0 outputs compared")
    rare = sorted(claimed, key=claimed.get)[:3]
    r = certify.compare_probabilities(claimed, m, outputs=rare)
    assert r.verdict == "inconclusive" and r.coverage < 0.5 and "below min_coverage = 0.5" in r.reason
    assert certify.compare_probabilities(claimed, m, outputs=rare, min_coverage=0).verdict == "pass"
    assert certify.compare_probabilities(lambda o: claimed[o], m, outputs=rare).verdict == "inconclusive"
    # coverage is the exact mass of the compared outputs; a mapping covers everything
    exact = dict(m.distribution())
    assert r.coverage == pytest.approx(float(sum(exact[o] for o in rare)), rel=1e-12)
    assert certify.compare_probabilities(claimed, m).coverage == pytest.approx(1)
    # a failure is a failure whatever the coverage
    claimed[rare[0]] *= 2
    assert certify.compare_probabilities(claimed, m, outputs=rare).verdict == "fail"


# ---------------------------------------------------------------------------------------
# the float64 example: certified, and its broken variant caught


@pytest.mark.slow
def test_float_joint_certified():
    counts, k = EXAMPLE
    exact = exactdp.Joint(counts, k, epsilon=1)
    impl = FloatJoint(counts, k)
    assert certify.compare_mtilde(impl.log_mtilde, exact, rows=impl.rows, cols=impl.cols).passed
    assert certify.compare_probabilities(impl.probabilities(), exact, rtol=1e-12).passed
    fit = certify.goodness_of_fit(impl.samples(20_000, rng=1), exact)
    assert fit.passed_at(1e-6)


# Power of the sampler test against the broken variant (alpha = 1e-6), from power():
# about 0.0001 at n = 3,000, 0.02 at n = 10,000, 0.79 at 30,000; >= 0.99 from n ~ 44,300.
BROKEN_N = 45_000


@pytest.mark.slow
def test_broken_float_joint_caught():
    counts, k = EXAMPLE
    exact = exactdp.Joint(counts, k, epsilon=1)
    broken = BrokenFloatJoint(counts, k)
    # its m~ are right: only the weights are wrong
    assert certify.compare_mtilde(broken.log_mtilde, exact, rows=broken.rows, cols=broken.cols).passed
    r = certify.compare_probabilities(broken.probabilities(), exact)
    assert not r.passed and r.max_rel_error > 0.05
    # how many draws the sampler test needs to see it
    alternative = broken.probabilities()
    assert certify.power(exact, alternative, 10_000).power < 0.05  # a 10^4-draw test misses it
    needed = certify.samples_needed(exact, alternative, 0.99)
    assert 40_000 < needed < BROKEN_N
    p = certify.power(exact, alternative, BROKEN_N)
    assert p.power > 0.99 and p.df == 19
    mc = certify.power(exact, alternative, BROKEN_N, method="monte-carlo", trials=300, seed=1)
    assert mc.interval[0] > 0.95
    fit = certify.goodness_of_fit(broken.samples(BROKEN_N, rng=1), exact)
    assert fit.verdict_at(1e-6) == "fail", fit.summary()


# ---------------------------------------------------------------------------------------
# the CLI


@pytest.mark.slow
def test_cli_certify(capsys, tmp_path):
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = m.samples(3000, rng=9)
    csv = tmp_path / "draws.csv"
    csv.write_text("".join(f"{a},{b}\n" for a, b in draws))
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--samples", str(csv), "--json",
                   "--delta", "0.1"])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    data = json.loads(out)
    fit = certify.goodness_of_fit(draws, m, delta=0.1)
    assert data["passed"] and data["verdict"] == "pass" and data["n"] == 3000 and data["df"] == fit.df
    assert data["verdict_line"] == fit.verdict_line() and data["n_needed"] == fit.samples_needed()
    assert data["power"] >= 0.99 and data["plan"]["untested_outputs"] == 0
    # the default delta = 0.05 needs more draws than 3000: INCONCLUSIVE, exit status 3
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--samples", str(csv)])
    out, err = capsys.readouterr()
    fit = certify.goodness_of_fit(draws, m)
    assert status == 3 and err == "" and fit.verdict == "inconclusive"
    assert f"verdict: {fit.verdict_line()}\n" in out and "n needed for TV 0.05: 7,040" in out
    assert data["statistic"] == pytest.approx(fit.statistic, rel=1e-12)
    jsonl = tmp_path / "draws.jsonl"
    jsonl.write_text("".join(json.dumps(list(o)) + "\n" for o in draws))
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "2", "--samples", str(jsonl)])
    out, err = capsys.readouterr()
    assert status == 1 and "verdict: FAIL" in out and err == ""


def test_single_ids_are_the_outputs_of_k_1():
    # a k = 1 sampler's draws as bare ids (ints, numpy integers, a 1-D array) were all
    # "invalid draws" and a correct sampler FAILed; a table keyed by ids was refused
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    draws = m.samples(certify.samples_needed(m), rng=1, as_array=True)
    for flat in (draws[:, 0], draws[:, 0].tolist()):
        fit = certify.goodness_of_fit(flat, m)
        assert fit.verdict == "pass" and not fit.invalid
    exact = {o[0]: float(p) for o, p in m.distribution()}
    assert certify.compare_probabilities(exact, m).verdict == "pass"
    # k = 2: a bare id has the wrong length (an invalid draw); a bool is no id
    m2 = exactdp.Joint([3, 1, 0, 2], 2, epsilon=1)
    fit = certify.goodness_of_fit([1] + [list(o) for o in m2.samples(50, rng=1)], m2)
    assert fit.verdict == "fail" and "exactly k = 2 item ids" in fit.invalid[0][1]
    assert "is not an integer" in certify.goodness_of_fit([True, 0], m).invalid[0][1]


def test_sample_files_with_a_byte_order_mark(capsys, tmp_path):
    # a CSV saved by a spreadsheet starts with U+FEFF: it was refused ("'\ufeff3' is not an item id")
    assert certify.read_samples("\ufeff3,1\n0 2\n") == [[3, 1], [0, 2]]
    assert certify.read_samples("\ufeff[[3, 1]]") == [[3, 1]]
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = m.samples(3000, rng=9)
    csv = tmp_path / "draws.csv"
    csv.write_bytes(("\ufeff" + "".join(f"{a},{b}\n" for a, b in draws)).encode("utf-8"))
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--samples", str(csv), "--delta", "0.1"])
    out, err = capsys.readouterr()
    assert status == 0 and err == "" and "verdict: PASS" in out
    with pytest.raises(ValueError, match=r"line 1: 'a' is not an item id"):
        certify.read_samples("\ufeffa,b\n")  # negative control: a header is still refused


# ---------------------------------------------------------------------------------------
# every mechanism that exists: its own exact sampler passes, its distribution compares


def _factories():
    out = {}
    for name, kw in [("Joint", {}), ("PNFJoint", {}), ("JointSet", {}), ("Canonical", {}),
                     ("CanonicalGamma1", {}), ("Peeling", {}), ("Peeling", {"noise": "exponential"})]:
        cls = getattr(exactdp, name, None)
        if cls is not None:
            label = name + ("-" + kw["noise"] if kw else "")
            out[label] = (lambda cls, kw: lambda c, k: cls(c, k, epsilon=1, **kw))(cls, kw)
    return out


FACTORIES = _factories()


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_mechanism_self_consistent(name):
    m = FACTORIES[name]([5, 3, 3, 1, 0], 2)
    claimed = {o: float(p) for o, p in m.distribution()}
    assert certify.compare_probabilities(claimed, m, rtol=1e-14).passed
    n = certify.samples_needed(m, delta=0.1)  # the n recommended for TV 0.1
    fit = certify.goodness_of_fit(m.samples(n, rng=17), m, delta=0.1)
    assert fit.verdict == "pass", fit.summary()


def test_a_set_is_not_read_as_a_sequence_in_its_hash_order():
    # a frozenset key or draw against a sequence mechanism (k > 1) was read in the set's
    # iteration order: a claimed set probability became the claim of one ordering
    from exactdp.errors import InvalidOutputError

    j = exactdp.Joint([2, 1, 0], 2, epsilon=1)
    claimed = {frozenset(o): float(p) for o, p in j.as_sets().distribution(dps=20)}
    with pytest.raises(InvalidOutputError, match=r"needs an ordered output .*\.as_sets\(\)"):
        certify.compare_probabilities(claimed, j)
    assert certify.compare_probabilities(claimed, j.as_sets()).verdict == "pass"
    fit = certify.goodness_of_fit([frozenset(o) for o in j.samples(300, rng=1)], j)
    assert fit.verdict == "fail" and "not a set" in fit.summary()
    assert certify.normalise_output({2}) == (2,)  # one id: a k = 1 output, either way
    with pytest.raises(InvalidOutputError, match="not a set"):
        certify.normalise_output(frozenset({0, 1}))


def test_samples_needed_of_a_single_output_mechanism_says_nothing_can_be_detected():
    # it said "power stays below 0.99 up to 1000000000 draws; raise max_n or delta": no max_n helps
    for m in (exactdp.Peeling([7], 1, epsilon=1), exactdp.JointSet([3, 2, 1], 3, epsilon=1)):
        with pytest.raises(NothingToDetectError, match="has a single output"):
            certify.samples_needed(m)
    assert certify.samples_needed(exactdp.Peeling([7, 0], 1, epsilon=1)) > 0


def test_claimed_mpf_values_keep_their_sign():
    # a claimed value given as an mpf is read at its exact binary value, sign included
    # (mpmath's man_exp alone is the magnitude's); the verdicts on the band's edge use it
    import mpmath

    from exactdp.certify.compare import _as_fraction
    from exactdp._oracle.verdicts import exact_compare

    assert _as_fraction(mpmath.mpf(-0.375)) == Fraction(-3, 8)
    assert exact_compare(mpmath.mpf(-0.375), Fraction(-3, 8), mpmath.mpf(-0.375)) == 0
    assert exact_compare(mpmath.mpf(-0.375), Fraction(3, 8), mpmath.mpf(0.375)) == -1
