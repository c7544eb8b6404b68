"""Tests of exactdp.Peeling (docs/definitions.md §2.5 and §3) against brute force, and the one-shot Gumbel
identity (Theorem 1 of the one-shot top-k blog post, Durfee & Rogers 2019).

References never call the code under test: every sequence of distinct items is enumerated
and its probability formed as the product over rounds of

- gumbel: ``w_j / sum_{remaining} w`` with ``w_j = base**(-c_j)`` (exact Fractions) or
  ``exp((eps/k) c_j)`` (mpmath, 50 digits);
- exponential: permute-and-flip among the remaining *items* (one factor per item, not per
  level): ``p_j ∫_0^1 prod_{i != j} (1 - t p_i) dt``, ``p_i = w_i / max w`` (exact).

The one-shot identity integrates the order-statistics density of Gumbel(k/eps)-perturbed
counts with mpmath quadrature at 40 digits and compares with Peeling("gumbel") to 30.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from fractions import Fraction

import mpmath
import pytest
import sympy

import exactdp
from exactdp import errors
from exactdp.levels import Level

from conftest import chi2_statistic, chi2_threshold
from test_canonical import pnf_exact  # permute-and-flip over explicit outputs, exact

ALPHA = 1e-6  # false-alarm probability of every goodness-of-fit test


def sequences(d, k):
    return list(itertools.permutations(range(d), k))


def peel_exact(counts, k, base, noise):
    """``{sequence: Fraction}`` by explicit rounds over items."""
    b = Fraction(base)
    w = [b ** (-c) for c in counts]
    out = {}
    for seq in sequences(len(counts), k):
        p = Fraction(1)
        remaining = set(range(len(counts)))
        for j in seq:
            if noise == "gumbel":
                p *= w[j] / sum(w[i] for i in remaining)
            else:
                p *= pnf_exact({i: w[i] for i in remaining})[j]
            remaining.discard(j)
        out[seq] = p
    return out


def peel_gumbel_mp(counts, k, eps, dps=50):
    with mpmath.workdps(dps):
        lam = mpmath.mpf(eps.numerator) / (eps.denominator * k)
        top = max(counts)
        w = [mpmath.exp(lam * (c - top)) for c in counts]
        out = {}
        for seq in sequences(len(counts), k):
            p = mpmath.mpf(1)
            remaining = set(range(len(counts)))
            for j in seq:
                p *= w[j] / mpmath.fsum(w[i] for i in remaining)
                remaining.discard(j)
            out[seq] = p
        return out


def rel_close(num, exact, digits=30):
    with mpmath.workdps(60):
        w = mpmath.mpf(exact.numerator) / exact.denominator if isinstance(exact, Fraction) else mpmath.mpf(exact)
        return abs(num - w) <= mpmath.mpf(10) ** -digits * abs(w)


CASES = [
    (5, 3, 1, 0),
    (2, 2, 1, 1, 0),  # ties
    (3, 3, 3, 0),
    (1, 1, 1, 1),  # all equal
    (4, -1, 2, 2, 7),  # negative count, unsorted
]


# --------------------------------------------------------------------------------------
# exact probabilities
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", CASES)
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_exact_probabilities_match_brute_force(counts, noise):
    d = len(counts)
    base = Fraction(2, 3)
    for k in range(1, min(d, 3) + 1):
        m = exactdp.Peeling(counts, k, base=base, noise=noise)
        want = peel_exact(counts, k, base, noise)
        assert sum(want.values()) == 1
        for seq, w in want.items():
            got = m.probability_exact(seq)
            assert isinstance(got, sympy.Rational) and got == sympy.Rational(w.numerator, w.denominator), (seq, got, w)
            assert rel_close(m.probability(seq), w)
        dist = m.distribution()
        assert len(dist) == math.perm(d, k) == m.support_size()
        assert {o for o, _ in dist} == set(want)
        for o, p in dist:
            assert rel_close(p, want[o])
        with mpmath.workdps(40):
            assert abs(mpmath.fsum(p for _, p in dist) - 1) < mpmath.mpf(10) ** -29


@pytest.mark.parametrize("counts", CASES)
def test_certified_gumbel_with_epsilon(counts):
    d = len(counts)
    eps = Fraction(3, 2)
    for k in range(1, min(d, 3) + 1):
        m = exactdp.Peeling(counts, k, epsilon=eps)
        want = peel_gumbel_mp(counts, k, eps)
        for seq, w in want.items():
            assert rel_close(m.probability(seq, dps=30), w)
            with mpmath.workdps(60):
                assert rel_close(m.log_probability(seq, dps=30), mpmath.log(w)) or abs(mpmath.log(w)) < 1e-50
        # the symbolic form evaluates to the same number
        seq = next(iter(want))
        with mpmath.workdps(50):
            assert rel_close(sympy.N(m.probability_exact(seq), 50), want[seq])


def test_certified_exponential_with_epsilon():
    counts, k, eps = (4, 3, 3, 0), 2, Fraction(1)
    m = exactdp.Peeling(counts, k, epsilon=eps, noise="exponential")
    # per-round permute-and-flip by direct polynomial expansion at 80 digits
    with mpmath.workdps(80):
        lam = mpmath.mpf(eps.numerator) / (eps.denominator * k)
        for seq in sequences(len(counts), k):
            p = mpmath.mpf(1)
            remaining = set(range(len(counts)))
            for j in seq:
                top = max(counts[i] for i in remaining)
                acc = {i: mpmath.exp(lam * (counts[i] - top)) for i in remaining}
                poly = [mpmath.mpf(1)]
                for i in remaining:
                    if i != j:
                        poly = [a - acc[i] * b for a, b in zip(poly + [0], [0] + poly)]
                p *= acc[j] * mpmath.fsum(c / (n + 1) for n, c in enumerate(poly))
                remaining.discard(j)
            assert rel_close(m.probability(seq, dps=30), p)
            assert rel_close(m.log_probability(seq, dps=30), mpmath.log(p))


def test_paper_instance():
    """docs/peeling.md: counts (10, 5, 1, 1), k = 2, eps = 1."""
    g = exactdp.Peeling([10, 5, 1, 1], 2, epsilon=1)
    e = sympy.exp
    want = 1 / ((1 + e(-5) / 2 * 0 + e(sympy.Rational(-5, 2)) + 2 * e(sympy.Rational(-9, 2))) * (1 + 2 * e(-2)))
    assert sympy.simplify(g.probability_exact((0, 1)) - want) == 0
    x = exactdp.Peeling([10, 5, 1, 1], 2, epsilon=1, noise="exponential")
    assert x.probability((0, 1)) > g.probability((0, 1))


# --------------------------------------------------------------------------------------
# levels (count sequences), outputs, rounds
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", CASES)
def test_levels_are_count_sequences(counts):
    d = len(counts)
    for k in range(1, d + 1):
        m = exactdp.Peeling(counts, k, base=Fraction(1, 2))
        tally = Counter(tuple(counts[i] for i in seq) for seq in sequences(d, k))
        want = sorted(tally.items(), reverse=True)
        levels = m.levels()
        assert [(lv.utility, lv.multiplicity) for lv in levels] == want
        assert all(isinstance(lv, Level) for lv in levels)
        outs = list(m.outputs())
        assert sorted(outs) == sequences(d, k)
        assert [m.utility(o) for o in outs] == [lv.utility for lv in levels for _ in range(lv.multiplicity)]
        lp = m.level_probabilities()
        with mpmath.workdps(40):
            assert abs(mpmath.fsum(p for _, p in lp) - 1) < mpmath.mpf(10) ** -29
        exact = peel_exact(counts, k, Fraction(1, 2), "gumbel") if k <= 3 else None
        if exact:
            for (lv, p) in lp:
                w = sum(v for s, v in exact.items() if tuple(counts[i] for i in s) == lv.utility)
                assert rel_close(p, w)


def test_levels_limit(monkeypatch):
    import exactdp.peeling as peeling

    monkeypatch.setattr(peeling, "PEELING_LEVELS_LIMIT", 10)
    m = exactdp.Peeling(list(range(6)), 2)
    with pytest.raises(errors.TooManyOutputsError, match="PEELING_LEVELS_LIMIT"):
        m.levels()
    assert 0 < m.probability((5, 4)) < 1  # never needs the levels
    assert len(m.sample(rng=1)) == 2


def test_round_view():
    counts = (5, 3, 3, 0)
    m = exactdp.Peeling(counts, 3, base=Fraction(1, 2))
    assert m.round_levels() == (Level(5, 1), Level(3, 2), Level(0, 1))
    assert m.round_levels((1,)) == (Level(5, 1), Level(3, 1), Level(0, 1))
    rd = m.round_distribution((0,), dps=30)
    assert [i for i, _ in rd] == [1, 2, 3]
    w = {1: Fraction(8), 2: Fraction(8), 3: Fraction(1)}
    for i, p in rd:
        assert rel_close(p, w[i] / 17)
    with pytest.raises(errors.InvalidOutputError, match="prefix"):
        m.round_levels((0, 1, 2))
    with pytest.raises(errors.InvalidOutputError):
        m.round_distribution((0, 0))


def test_large_instance_probability():
    counts = [10**5 // r for r in range(1, 5001)]
    k, eps = 5, Fraction(1, 50)
    for noise in ("gumbel", "exponential"):
        m = exactdp.Peeling(counts, k, epsilon=eps, noise=noise)
        seq = (0, 1, 2, 4, 3)
        p = m.probability(seq, dps=30)
        assert 0 < p < 1
        if noise == "gumbel":
            with mpmath.workdps(50):
                lam = mpmath.mpf(eps.numerator) / (eps.denominator * k)
                w = [mpmath.exp(lam * (c - counts[0])) for c in counts]
                want = mpmath.mpf(1)
                for r, j in enumerate(seq):
                    want *= w[j] / mpmath.fsum(w[i] for i in range(len(counts)) if i not in seq[:r])
                assert rel_close(p, want, 29)


# --------------------------------------------------------------------------------------
# the one-shot Gumbel identity (blog Theorem 1)
# --------------------------------------------------------------------------------------
def gumbel_pdf_cdf(beta):
    def pdf(x):
        z = x / beta
        return mpmath.exp(-z - mpmath.exp(-z)) / beta

    def cdf(x):
        return mpmath.exp(-mpmath.exp(-x / beta))

    def sf(x):  # 1 - cdf, without cancellation
        return -mpmath.expm1(-mpmath.exp(-x / beta))

    return pdf, cdf, sf


def integration_range(counts, beta):
    """``[lo, hi]`` outside of which every Gumbel(beta)-perturbed count lies with probability
    below ``e**-110`` (left: ``F(x) = exp(-e^{-x/beta}) <= e^{-110}``; right:
    ``1 - F(x) <= e^{-x/beta} = e^{-110}``): far below the 30 digits compared."""
    lo = min(counts) - beta * mpmath.log(110)
    hi = max(counts) + 110 * beta
    return lo, hi, [min(counts), max(counts) + beta, max(counts) + 12 * beta]


def one_shot_probability(counts, seq, epsilon, dps=40):
    """P(the k largest of c_j + Gumbel(k/eps) are seq, in order), k = len(seq) <= 2, by
    integrating the density of the k-th largest noisy value: item ``seq[-1]`` has it at
    ``u``, the items before it are above ``u`` (``1 - F``), all other items below (``F``)."""
    k = len(seq)
    assert k <= 2
    with mpmath.workdps(dps):
        beta = mpmath.mpf(k) / (mpmath.mpf(epsilon.numerator) / epsilon.denominator)
        pdf, cdf, sf = gumbel_pdf_cdf(beta)
        lo, hi, breaks = integration_range(counts, beta)
        rest = [c for j, c in enumerate(counts) if j not in seq]

        def density(u):
            out = pdf(u - counts[seq[-1]])
            for i in seq[:-1]:
                out *= sf(u - counts[i])
            for c in rest:
                out *= cdf(u - c)
            return out

        return mpmath.quad(density, [lo] + breaks + [hi])


def one_shot_probability_nested(counts, seq, epsilon, dps=34):
    """k = 2 by the blog's Equation (3) literally: the joint density of the two largest
    noisy values ``u1 > u2`` integrated over ``u2 < u1`` and then ``u1`` (nested quadrature)."""
    i1, i2 = seq
    with mpmath.workdps(dps):
        beta = mpmath.mpf(2) / (mpmath.mpf(epsilon.numerator) / epsilon.denominator)
        pdf, cdf, _ = gumbel_pdf_cdf(beta)
        lo, hi, breaks = integration_range(counts, beta)
        rest = [c for j, c in enumerate(counts) if j not in seq]

        def below(u2):
            out = pdf(u2 - counts[i2])
            for c in rest:
                out *= cdf(u2 - c)
            return out

        def inner(u1):
            pts = [lo] + [b for b in breaks if b < u1] + [u1]
            return mpmath.quad(below, pts, method="gauss-legendre")

        return mpmath.quad(lambda u1: pdf(u1 - counts[i1]) * inner(u1), [lo] + breaks + [hi], method="gauss-legendre")


ONE_SHOT_CASES = [
    ((3, 1, 0, 0), 2, Fraction(1)),
    ((2, 2, 1), 2, Fraction(1, 2)),
    ((5, 0, 0, 1), 1, Fraction(1)),
    ((4, 2, 1, 0), 2, Fraction(3)),
    ((1, 0), 2, Fraction(2)),
]


@pytest.mark.parametrize("counts, k, eps", ONE_SHOT_CASES)
def test_one_shot_gumbel_equals_peeling(counts, k, eps):
    m = exactdp.Peeling(counts, k, epsilon=eps, noise="gumbel")
    for seq in sequences(len(counts), k):
        got = m.probability(seq, dps=35)
        want = one_shot_probability(counts, seq, eps)
        assert rel_close(got, want, 30), (seq, got, want)


def test_one_shot_gumbel_nested_joint_density():
    counts, eps = (3, 1, 0, 0), Fraction(1)
    m = exactdp.Peeling(counts, 2, epsilon=eps)
    want = one_shot_probability_nested(counts, (1, 2), eps)
    assert rel_close(m.probability((1, 2), dps=35), want, 30)


# --------------------------------------------------------------------------------------
# samplers
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_sampler_goodness_of_fit(noise):
    m = exactdp.Peeling((3, 2, 2, 0), 2, epsilon=Fraction(3, 2), noise=noise)
    n = 4000
    draws = Counter(m.samples(n, rng=31337))
    expected = {o: float(p) * n for o, p in m.distribution()}
    stat, df = chi2_statistic(draws, expected)
    assert stat < chi2_threshold(df, ALPHA), (stat, df)


def test_sampler_reproducible_and_valid():
    for noise in ("gumbel", "exponential"):
        m = exactdp.Peeling([4, 3, 3, 1, 0], 3, epsilon=1, noise=noise)
        a = m.samples(40, rng=5)
        assert a == m.samples(40, rng=random.Random(5))
        assert all(isinstance(s, tuple) and len(set(s)) == 3 for s in a)
        assert a != m.samples(40, rng=6)
    one = exactdp.Peeling([1, 2, 3], 3)
    assert all(sorted(s) == [0, 1, 2] for s in one.samples(10, rng=1))


# --------------------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------------------
def test_bad_inputs():
    with pytest.raises(errors.InvalidParameterError) as info:
        exactdp.Peeling([3, 2, 1], 2, noise="foo")
    assert info.value.argument == "noise"
    with pytest.raises(errors.ArgumentTypeError, match="noise"):
        exactdp.Peeling([3, 2, 1], 2, noise=None)
    with pytest.raises(errors.InvalidParameterError, match="epsilon"):
        exactdp.Peeling([3, 2, 1], 2, epsilon=-1)
    with pytest.raises(errors.InvalidParameterError, match="base"):
        exactdp.Peeling([3, 2, 1], 2, epsilon=1, base="1/2")
    with pytest.raises(errors.InvalidParameterError, match="k=0"):
        exactdp.Peeling([3, 2, 1], 0)
    with pytest.raises(errors.InvalidCountsError):
        exactdp.Peeling([], 1)
    m = exactdp.Peeling([3, 2, 1], 2)
    for bad in [(0,), (0, 0), (0, 5), (0, 1, 2)]:
        with pytest.raises(errors.InvalidOutputError):
            m.probability(bad)
    with pytest.raises(errors.ArgumentTypeError):
        m.probability((0, "1"))
    with pytest.raises(errors.TooManyOutputsError):
        m.distribution(max_outputs=2)
