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

import mpmath
import numpy as np
import pytest

import exactdp
from exactdp import certify
from exactdp.cli import main
from exactdp.errors import InvalidParameterError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import BrokenFloatJoint, FloatJoint  # noqa: E402

from conftest import brute_probabilities_base, mp_probabilities_eps  # noqa: E402

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
    # Fractions are compared exactly (converted with 30+ digits): no error at all
    r = certify.compare_probabilities(exact, m, rtol=0, atol=1e-28)
    assert r.passed and r.max_abs_error < 1e-28


def test_compare_mechanism_without_levels():
    gamma1 = getattr(exactdp, "CanonicalGamma1", None)
    if gamma1 is None:  # pragma: no cover - not written yet
        return
    m = gamma1([3, 2, 2, 0], 2, epsilon=1)
    claimed = {o: float(p) for o, p in m.distribution()}
    assert certify.compare_probabilities(claimed, m).passed
    fit = certify.goodness_of_fit(m.samples(3000, rng=4), m)
    assert fit.passed() and fit.within_df == 0


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
    fit = certify.goodness_of_fit(m.samples(4000, rng=11), m)
    assert fit.passed() and fit.p_value > 1e-4
    assert fit.df == fit.level_df + fit.within_df and fit.level_df == 3
    assert sum(b.observed for b in fit.bins if b.stage == "level") == 4000
    assert sum(b.expected for b in fit.bins if b.stage == "level") == pytest.approx(4000, rel=1e-12)
    assert "by level" in fit.summary() and "stage" in fit.table()


def test_wrong_epsilon_is_rejected():
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = exactdp.Joint(*SMALL, epsilon="1.2").samples(4000, rng=5)
    fit = certify.goodness_of_fit(draws, m)
    assert not fit.passed() and fit.level_p_value < 1e-6


def test_invalid_and_impossible_draws():
    m = exactdp.Joint(*SMALL, epsilon=1)
    fit = certify.goodness_of_fit([(0, 1)] * 10 + [(0, 0), (0, 9), "ab"], m)
    assert not fit.passed(1e-300) and fit.p_value == 0 and len(fit.invalid) == 3
    assert "invalid draw" in fit.summary()


def test_within_level_grouped_bins_catch_a_nonuniform_sampler():
    m = exactdp.Joint([5] + [0] * 29, 2, epsilon=1)  # levels of 29 and 841 sequences
    rng = random.Random(2)
    good = m.samples(3000, rng=rng)
    fit = certify.goodness_of_fit(good, m)
    assert fit.passed() and fit.within_df > 20
    assert any("outputs" in b.label and "-" in b.label for b in fit.bins if b.stage == "within")
    # right level frequencies, but within the big level only sequences avoiding items 20-29
    bad = []
    for o in good:
        if m.utility(o) == -5:  # replace items 20-29 by other zero-count items
            o = tuple(rng.choice([i for i in range(1, 20) if i not in o]) if x >= 20 else x for x in o)
            o = o if o[0] != o[1] else (o[0], 0)
        bad.append(o)
    fit_bad = certify.goodness_of_fit(bad, m)
    assert fit_bad.level_p_value > 1e-3 and fit_bad.within_p_value < 1e-6 and not fit_bad.passed()
    # levels-only test cannot see it
    assert certify.goodness_of_fit(bad, m, within=False).passed()
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
# the float64 example: certified, and its broken variant caught


def test_float_joint_certified():
    counts, k = EXAMPLE
    exact = exactdp.Joint(counts, k, epsilon=1)
    impl = FloatJoint(counts, k)
    assert certify.compare_mtilde(impl.log_mtilde, exact, rows=impl.rows, cols=impl.cols).passed
    assert certify.compare_probabilities(impl.probabilities(), exact, rtol=1e-12).passed
    fit = certify.goodness_of_fit(impl.samples(20_000, rng=1), exact)
    assert fit.passed(1e-6)


# Power of the sampler test against the broken variant (alpha = 1e-6), from power():
# about 0.0001 at n = 3,000, 0.02 at n = 10,000, 0.79 at 30,000; >= 0.99 from n ~ 44,300.
BROKEN_N = 45_000


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
    assert not fit.passed(1e-6), fit.summary()


# ---------------------------------------------------------------------------------------
# the CLI


def test_cli_certify(capsys, tmp_path):
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = m.samples(3000, rng=9)
    csv = tmp_path / "draws.csv"
    csv.write_text("".join(f"{a},{b}\n" for a, b in draws))
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--samples", str(csv), "--json"])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    data = json.loads(out)
    fit = certify.goodness_of_fit(draws, m)
    assert data["passed"] and data["n"] == 3000 and data["df"] == fit.df
    assert data["statistic"] == pytest.approx(fit.statistic, rel=1e-12)
    jsonl = tmp_path / "draws.jsonl"
    jsonl.write_text("".join(json.dumps(list(o)) + "\n" for o in draws))
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "2", "--samples", str(jsonl)])
    out, err = capsys.readouterr()
    assert status == 1 and "verdict: FAIL" in out and err == ""


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
    fit = certify.goodness_of_fit(m.samples(2000, rng=17), m)
    assert fit.passed(1e-6), fit.summary()
