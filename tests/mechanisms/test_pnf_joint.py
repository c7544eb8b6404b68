"""Tests of exactdp.PNFJoint (docs/definitions.md §2.2; Joint paper Appendix D, Algorithm 5).

The exhaustive tests enumerate every count vector in {0,1,2,3}^d for d <= 4 and every k,
and compare PNFJoint's exact probabilities (base 1/2) for *every output* with two
independent brute-force computations over all sequences: the permute-and-flip definition
(random order, flip coins) and report-noisy-max with Exponential noise (both in
tests/twins/pnf.py, ``pnf_joint_brute``).  Goodness-of-fit tests use a fixed seed and a
chi-square threshold at false-alarm probability 1e-7 each (fewer than 10 in this file, so
below 1e-6 in total).
"""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import product

import mpmath
import pytest
import sympy

import exactdp
from exactdp.errors import InvalidOutputError, NoClosedFormError, TooManyOutputsError

from twins import ALPHA, NoFloatRandom, chi2_quantile, chi2_stat, pnf_joint_brute, rel_err

HALF = Fraction(1, 2)


# ---------------------------------------------------------------------------------------
# exhaustive small instances
# ---------------------------------------------------------------------------------------
def _instances(max_d=4):
    for d in range(1, max_d + 1):
        for counts in product(range(4), repeat=d):
            for k in range(1, d + 1):
                yield list(counts), k


@pytest.mark.slow
def test_exhaustive_exact_equals_brute_force():
    """All counts in {0..3}^d, d <= 4, all k (1,252 instances): exact probability of every
    output equals permute-and-flip by definition and report-noisy-max (exact rationals)."""
    n = 0
    for counts, k in _instances():
        m = exactdp.PNFJoint(counts, k, base=HALF)
        brute = pnf_joint_brute(counts, k)
        assert m.support_size() == len(brute)
        assert sum(lv.multiplicity for lv in m.levels()) == len(brute)
        per_level = {}
        for o, p in brute.items():
            u = m.utility(o)
            if u not in per_level:
                e = m.probability_exact(o)
                per_level[u] = Fraction(int(e.p), int(e.q))
            assert per_level[u] == p, (counts, k, o)
        n += 1
    assert n == 4 + 16 * 2 + 64 * 3 + 256 * 4


def test_exhaustive_numeric_certified_against_exact():
    """Certified numbers (dps 30) vs exact, sorted count vectors d <= 4, all k."""
    for d in range(1, 5):
        for counts in set(tuple(sorted(c, reverse=True)) for c in product(range(4), repeat=d)):
            for k in range(1, d + 1):
                m = exactdp.PNFJoint(list(counts), k, base=HALF)
                lp = m.level_probabilities(dps=30)
                with mpmath.workdps(50):
                    assert abs(sum(p for _, p in lp) - 1) <= mpmath.mpf(10) ** -29
                for a, (lv, p) in enumerate(lp):
                    o = m._unrank(a, 0)
                    e = m.probability_exact(o)
                    assert rel_err(m.probability(o, dps=30), e) <= mpmath.mpf(10) ** -30
                    assert rel_err(p, e * lv.multiplicity) <= mpmath.mpf(10) ** -30


def test_distribution_over_outputs_and_tie_rule():
    """distribution() lists every sequence once with the brute-force probability, and
    permuting the input counts only relabels items (the tie rule does not matter)."""
    for counts, k in [([3, 1, 1, 0], 2), ([2, 2, 2, 1], 3), ([1, 3, 3, 0], 4), ([0, 0, 0], 2)]:
        m = exactdp.PNFJoint(counts, k, base=HALF)
        brute = pnf_joint_brute(counts, k)
        dist = m.distribution(dps=25)
        assert len(dist) == len(brute) and {o for o, _ in dist} == set(brute)
        for o, p in dist:
            assert rel_err(p, brute[o]) <= mpmath.mpf(10) ** -25
        perm = [2, 0, 3, 1][: len(counts)] if len(counts) == 4 else [1, 2, 0]
        permuted = [counts[perm[i]] for i in range(len(counts))]  # new item i is old perm[i]
        mp_ = exactdp.PNFJoint(permuted, k, base=HALF)
        inv = {old: new for new, old in enumerate(perm)}
        for o, p in brute.items():
            e = mp_.probability_exact(tuple(inv[x] for x in o))
            assert Fraction(int(e.p), int(e.q)) == p


# ---------------------------------------------------------------------------------------
# the paper's check values (Appendix D.3) and the comparison with Joint
# ---------------------------------------------------------------------------------------
def test_paper_example_small():
    m = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=1)
    j = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    p = m.probability((0, 1), dps=40)
    assert abs(p - 0.75) < 0.01 and abs(j.probability((0, 1)) - 0.63) < 0.01
    with mpmath.workdps(45):
        ref = mpmath.mpf("0.7510163054856326528697684043001757031819")
        assert abs(p - ref) <= mpmath.mpf(10) ** -39
    # the symbolic exact value agrees
    assert rel_err(p, m.probability_exact((0, 1))) <= mpmath.mpf(10) ** -40


def test_paper_example_large_reference_value():
    """(30, 15, 1 x 998), k=2, eps=1: independently computed reference value certified to +-3e-38."""
    counts = [30, 15] + [1] * 998
    m = exactdp.PNFJoint(counts, 2, epsilon=1)
    p = m.probability((0, 1), dps=40)
    with mpmath.workdps(50):
        ref = mpmath.mpf("0.43746838677874339307648514368442848820")
        assert abs(p - ref) <= mpmath.mpf("3e-38") + mpmath.mpf(10) ** -40 * p
    assert abs(p - 0.44) < 0.005
    assert abs(exactdp.Joint(counts, 2, epsilon=1).probability((0, 1)) - 0.34) < 0.005
    with mpmath.workdps(50):
        assert abs(sum(q for _, q in m.level_probabilities(dps=40)) - 1) <= mpmath.mpf(10) ** -39


# ---------------------------------------------------------------------------------------
# the rest of the public API (docs/definitions.md §3)
# ---------------------------------------------------------------------------------------
def test_api_surface():
    m = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=1)
    j = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    assert m.levels() == j.levels() and m.support_size() == 12
    assert m.utility([0, 1]) == 0 and m.utility((2, 0)) == -9
    assert isinstance(m.rule, exactdp.PermuteAndFlip)
    assert repr(m) == "PNFJoint([10, 5, 1, 1], k=2, epsilon=1)"
    lg = m.log_probability((0, 1), dps=30)
    with mpmath.workdps(40):
        assert abs(lg - mpmath.log(m.probability((0, 1), dps=35))) <= mpmath.mpf(10) ** -30 * abs(lg)
    assert list(m.outputs()) == list(j.outputs())
    with pytest.raises(TooManyOutputsError):
        m.distribution(max_outputs=5)
    for bad in [(0, 0), (0,), (0, 9), (0, 1, 2)]:
        with pytest.raises(InvalidOutputError):
            m.probability(bad)
    with pytest.raises(ValueError):
        exactdp.PNFJoint([1, 2], 2, epsilon=1, base=HALF)
    # sensitivity 2 halves the rate: equals base exp(-1/4)
    s2 = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=1, sensitivity=2)
    e2 = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=Fraction(1, 2))
    assert rel_err(s2.probability((0, 1)), e2.probability((0, 1), dps=35)) <= mpmath.mpf(10) ** -30
    # rational base: exact Rational; irrational, large support: a clear error naming the limit
    assert isinstance(exactdp.PNFJoint([3, 1, 0], 2, base=HALF).probability_exact((0, 1)), sympy.Rational)
    with pytest.raises(NoClosedFormError, match="PNF_SYMBOLIC_SUPPORT_LIMIT"):
        exactdp.PNFJoint(list(range(20)), 2, epsilon=1).probability_exact((19, 18))
    with pytest.raises(NoClosedFormError, match="PNF_EXACT_SUPPORT_LIMIT"):
        exactdp.PNFJoint(list(range(200)), 2, base=HALF).probability_exact((199, 198))


def test_huge_instance_certified():
    """d = 2,000, k = 100 (multiplicities ~10**270: float implementations overflow)."""
    m = exactdp.PNFJoint(list(range(2000, 0, -1)), 100, epsilon=1)
    lp = m.level_probabilities(dps=30)
    assert max(len(str(lv.multiplicity)) for lv, _ in lp) > 250
    with mpmath.workdps(50):
        assert abs(sum(p for _, p in lp) - 1) <= mpmath.mpf(10) ** -29
    best = tuple(range(100))
    assert rel_err(m.probability(best), lp[0][1]) <= mpmath.mpf(10) ** -30  # m_0 = 1
    # with S this large permute-and-flip equals the exponential mechanism to ~1/S
    em = exactdp.Joint(list(range(2000, 0, -1)), 100, epsilon=1).level_probabilities(dps=30)
    assert max(rel_err(a[1], b[1]) for a, b in zip(lp, em)) <= 2 * mpmath.mpf(10) ** -30


# ---------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sample_goodness_of_fit_over_outputs():
    """12 sequences of (10,5,1,1), k=2, eps=1; 24,000 draws; false alarm 1e-7."""
    m = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=1)
    dist = m.distribution(dps=20)
    n = 24_000
    draws = m.samples(n, rng=NoFloatRandom(31337))
    counts = [draws.count(o) for o, _ in dist]
    assert chi2_stat(counts, [float(p) for _, p in dist], n) < chi2_quantile(len(dist) - 1, ALPHA)


@pytest.mark.slow
def test_sample_goodness_of_fit_base_half_exhaustive_instance():
    m = exactdp.PNFJoint([3, 2, 2, 0], 3, base=HALF)
    brute = pnf_joint_brute([3, 2, 2, 0], 3)
    outs = sorted(brute)
    n = 24_000
    rng = NoFloatRandom(5)
    draws = [m.sample(rng) for _ in range(n)]
    counts = [draws.count(o) for o in outs]
    assert chi2_stat(counts, [float(brute[o]) for o in outs], n) < chi2_quantile(len(outs) - 1, ALPHA)


def test_sample_reproducible():
    m = exactdp.PNFJoint([30, 15] + [1] * 98, 3, epsilon=1)
    assert m.samples(20, rng=7) == m.samples(20, rng=7)
    assert m.samples(5, rng=random.Random(3)) == m.samples(5, rng=random.Random(3))
    draws = m.samples(20, rng=NoFloatRandom(1))
    assert all(len(set(s)) == 3 for s in draws)


def test_cli_dist_pnf_joint():
    """`exactdp dist pnf-joint` is registered by the CLI once exactdp.PNFJoint exists."""
    cli = pytest.importorskip("exactdp.cli")
    if "pnf-joint" not in getattr(cli, "MECHANISMS", {}):
        pytest.skip("the CLI does not register pnf-joint")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["dist", "pnf-joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "1"])
    assert code in (0, None)
    assert "0.751016305485633" in out.getvalue()


# ---------------------------------------------------------------------------------------
# extreme valid inputs (used to raise OverflowError / math domain error)
# ---------------------------------------------------------------------------------------
def test_extreme_inputs_reported():
    from exactdp import PNFJoint
    from exactdp.mechanisms.peeling import Peeling

    m = PNFJoint([10**400, 0], 1, epsilon=1)
    assert m.sample(rng=1) == (0,)
    # two outputs, p = exp(-10**400 / 2): P(second) = p / 2
    with mpmath.workdps(460):
        ref = -mpmath.mpf(10) ** 400 / 2 - mpmath.log(2)
        got = m.log_probability((1,), dps=30)
        assert abs(got - ref) <= mpmath.mpf(10) ** -30 * abs(ref)
    m = PNFJoint([3, 2, 0], 1, epsilon=10**400)
    assert m.sample(rng=1) == (0,)
    assert abs(m.probability((0,), dps=20) - 1) <= mpmath.mpf(10) ** -20
    m = PNFJoint([3, 2, 0], 1, base=Fraction(1, 10**400))
    # p = (10**-400, 10**-1200): P(o1) = p1 (3 - p2) / 6, exactly
    exact = m.probability_exact((1,))
    assert exact == sympy_rational(Fraction(1, 10**400) * (3 - Fraction(1, 10**1200)) / 6)
    with mpmath.workdps(60):
        assert abs(m.probability((1,), dps=40) - mpmath.mpf(exact.p) / exact.q) <= mpmath.mpf(10) ** -40 * m.probability((1,), dps=40)
    assert m.sample(rng=5) == (0,)
    for p in (Peeling([10**400, 5, 0], 2, epsilon=1, noise="exponential"),
              Peeling([3, 2, 0], 2, epsilon=10**400, noise="exponential"),
              Peeling([3, 2, 0], 2, base=Fraction(1, 10**400), noise="exponential")):
        assert 0 < p.probability((0, 1), dps=20) <= 1
        assert p.sample(rng=1)[0] == 0  # the first pick is item 0 up to probability e^{-huge}


def sympy_rational(f):
    return sympy.Rational(f.numerator, f.denominator)
