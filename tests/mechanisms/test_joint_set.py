"""Tests of exactdp.JointSet, exactdp.mechanisms.joint_set and joint_set_paper (docs/definitions.md §1, §2.3 and §3).

Reference values are computed here from the definitions (docs/definitions.md §2.3, the workshop paper's
Lemma 5 and Algorithm 1), never by calling the code under test: every k-subset is
enumerated, its counts sorted descending and compared with the top-k counts.
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import errors
from exactdp.mechanisms import joint_set as js
from exactdp.mechanisms import joint_set_paper as jsp
from exactdp.mechanisms.joint_set import (
    JointSet,
    count_at_least,
    count_at_least_brute,
    count_at_least_dp,
    count_at_least_matrix_paths,
    count_exactly,
    levels_dp,
    levels_matrix_paths,
)
from exactdp.mechanisms.joint_set_paper import (
    paper_algorithm1_distribution,
    privacy_loss,
    total_variation,
)
from exactdp.core.levels import Level


# ======================================================================================
# Independent reference (docs/definitions.md §2.3)
# ======================================================================================
def maxdiff(counts, subset) -> int:
    """``-u(S)``: ``max_i (c_(i) - c_{j_i})`` with both sides sorted descending."""
    top = sorted(counts, reverse=True)
    mine = sorted((counts[i] for i in subset), reverse=True)
    return max(a - b for a, b in zip(top, mine))


def brute_tally(counts, k) -> Counter:
    """``maxdiff -> number of k-subsets``."""
    return Counter(maxdiff(counts, s) for s in itertools.combinations(range(len(counts)), k))


def brute_levels(counts, k) -> list[tuple[int, int]]:
    return sorted(((-D, m) for D, m in brute_tally(counts, k).items()), reverse=True)


def brute_at_least(tally: Counter, M: int) -> int:
    return sum(m for D, m in tally.items() if D <= M)


def brute_probabilities(counts, k, base: Fraction) -> dict:
    """Exact ``P(S) = base**(-u(S)) / Z`` (rational base) for every subset."""
    subsets = [frozenset(s) for s in itertools.combinations(range(len(counts)), k)]
    w = {s: Fraction(base) ** maxdiff(counts, s) for s in subsets}
    z = sum(w.values())
    return {s: x / z for s, x in w.items()}


def mp_probabilities(counts, k, epsilon: Fraction, dps: int, sensitivity=Fraction(1)) -> dict:
    subsets = [frozenset(s) for s in itertools.combinations(range(len(counts)), k)]
    with mpmath.workdps(dps):
        lam = mpmath.mpf(epsilon.numerator) / (2 * epsilon.denominator) / (mpmath.mpf(sensitivity.numerator) / sensitivity.denominator)
        w = {s: mpmath.exp(-lam * maxdiff(counts, s)) for s in subsets}
        z = mpmath.fsum(w.values())
        return {s: +(x / z) for s, x in w.items()}


def grid_paths(A) -> int:
    """Right/down paths from the top-left to the bottom-right corner through ones (naive)."""
    rows, cols = len(A), len(A[0])
    ways = [[0] * cols for _ in range(rows)]
    for r in range(rows):
        for c in range(cols):
            if not A[r][c]:
                continue
            if r == 0 and c == 0:
                ways[r][c] = 1
            else:
                ways[r][c] = (ways[r - 1][c] if r else 0) + (ways[r][c - 1] if c else 0)
    return ways[-1][-1]


def chi2_threshold(df: int, alpha) -> mpmath.mpf:
    """``x`` with ``P(chi2_df > x) = alpha``: bisection on the regularized lower incomplete
    gamma function ``P(chi2_df <= x) = gammainc(df/2, 0, x/2, regularized=True)``."""
    with mpmath.workdps(40):
        target = 1 - mpmath.mpf(alpha.numerator) / alpha.denominator
        cdf = lambda x: mpmath.gammainc(mpmath.mpf(df) / 2, 0, x / 2, regularized=True)
        lo, hi = mpmath.mpf(0), mpmath.mpf(df + 10)
        while cdf(hi) < target:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if cdf(mid) < target else (lo, mid)
        return hi


def chi2_statistic(observed: Counter, expected: dict, n: int) -> tuple[float, int]:
    """Pearson's statistic over the keys of ``expected`` (probabilities), pooling bins with
    expected count < 5 (smallest first) into one."""
    assert not set(observed) - set(expected), "draw outside the support"
    bins, pool_e, pool_o = [], 0.0, 0
    for key in sorted(expected, key=lambda o: float(expected[o])):
        e = float(expected[key]) * n
        if e < 5 or pool_e and pool_e < 5:
            pool_e += e
            pool_o += observed.get(key, 0)
            if pool_e >= 5:
                bins.append((pool_e, pool_o))
                pool_e, pool_o = 0.0, 0
        else:
            bins.append((e, observed.get(key, 0)))
    if pool_e:
        e, o = bins.pop()
        bins.append((e + pool_e, o + pool_o))
    return sum((o - e) ** 2 / e for e, o in bins), len(bins) - 1


SMALL = range(4)


def all_vectors(d):
    return itertools.product(SMALL, repeat=d)


# ======================================================================================
# The three counting methods, exhaustively: {0,1,2,3}^d, d <= 6, every k, every M
# ======================================================================================
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6])
def test_counting_methods_agree_exhaustive(d):
    """Every vector of {0..3}^d, every k, every M in -1..4 (beyond 3 every subset counts):
    matrix paths == DP == brute force == reference tally, at least and exactly."""
    for counts in all_vectors(d):
        for k in range(1, d + 1):
            tally = brute_tally(counts, k)
            previous = 0
            for M in range(-1, 5):
                want = brute_at_least(tally, M)
                got = (
                    count_at_least_matrix_paths(counts, k, M),
                    count_at_least_dp(counts, k, M),
                    count_at_least_brute(counts, k, M),
                )
                assert got == (want, want, want), (counts, k, M, got, want)
                assert all(type(x) is int for x in got)
                # exactly at level -M, as the difference the three share
                assert want - previous == tally.get(M, 0)
                previous = want


def test_count_exactly_every_method():
    for counts in [(3, 2, 2, 0, 1), (0, 0, 0, 0), (5, 1, 4, 1, 1, 3)]:
        for k in range(1, len(counts) + 1):
            tally = brute_tally(counts, k)
            for M in range(-1, 7):
                want = tally.get(M, 0)
                for method in js.METHODS:
                    assert count_exactly(counts, k, M, method) == want
                    assert count_at_least(counts, k, M, method) == brute_at_least(tally, M)
                assert JointSet(counts, k).count_exactly(M, "dp") == want


def test_strict_matrix_paths_counts_strictly_greater():
    """With the strict reading of A, the paths count the sets with utility > -M."""
    for d in range(1, 6):
        for counts in all_vectors(d):
            for k in range(1, d + 1):
                tally = brute_tally(counts, k)
                for M in range(0, 5):
                    assert count_at_least_matrix_paths(counts, k, M, strict=True) == brute_at_least(tally, M - 1)


# -- larger random instances ---------------------------------------------------------
@st.composite
def big_instance(draw, max_d=30):
    d = draw(st.integers(1, max_d))
    kind = draw(st.sampled_from(["tied", "wide", "huge"]))
    if kind == "tied":
        pool = draw(st.lists(st.integers(-5, 12), min_size=1, max_size=6, unique=True))
        counts = draw(st.lists(st.sampled_from(pool), min_size=d, max_size=d))
    elif kind == "wide":
        counts = draw(st.lists(st.integers(-10**6, 10**6), min_size=d, max_size=d))
    else:  # beyond int64: the pure-Python candidate path
        counts = draw(st.lists(st.integers(-(10**25), 10**25), min_size=d, max_size=d))
    k = draw(st.integers(1, d))
    top = sorted(counts, reverse=True)
    diffs = sorted({a - b for a in top[:k] for b in top})
    M = draw(st.one_of(st.sampled_from(diffs), st.sampled_from(diffs).map(lambda x: x - 1),
                       st.integers(-3, 3)))
    return counts, k, M


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(big_instance())
def test_matrix_paths_equals_dp_random(inst):
    counts, k, M = inst
    a = count_at_least_matrix_paths(counts, k, M)
    assert a == count_at_least_dp(counts, k, M)
    assert 0 <= a <= math.comb(len(counts), k)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(big_instance(max_d=11))
def test_matrix_paths_equals_brute_random(inst):
    counts, k, M = inst
    tally = brute_tally(counts, k)
    assert count_at_least_matrix_paths(counts, k, M) == brute_at_least(tally, M)
    assert count_exactly(counts, k, M, "matrix-paths") == tally.get(M, 0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(big_instance(max_d=30))
def test_level_sweeps_agree_random(inst):
    """The production sweep (rows of A from the ranking), the sweep on M̂, and the DP."""
    counts, k, _ = inst
    m = JointSet(counts, k, epsilon=1)
    levels = list(m.levels())
    assert levels == levels_matrix_paths(counts, k) == levels_dp(counts, k)
    assert sum(lv.multiplicity for lv in levels) == math.comb(len(counts), k) == m.support_size()


def test_staircase_counter_against_naive_grid():
    """Lemma 7's block/Toeplitz count equals the naive grid count on random row profiles,
    including non-monotone profiles (rows of A that are longer than the rows below)."""
    rng = random.Random(4)
    for _ in range(3000):
        k = rng.randint(1, 7)
        W = rng.randint(1, 9)
        profile = [rng.randint(0, W) for _ in range(k)]
        if rng.random() < 0.5:
            profile.sort()
        A = [[1 if c < p else 0 for c in range(W)] for p in profile] + [[1] * W]
        assert js._staircase_paths(profile, k, W) == grid_paths(A), (profile, W)


def test_paper_matrix_examples():
    """The paper's A^34 example (k=3, d=5, c_3 - c_4 below c_1 - c_2 and c_2 - c_3) needs
    <=; Lemma 6 counts the sets with utility >= -(c_3 - c_4)."""
    counts = [10, 7, 5, 4, 0]
    A = js.matrix_a(counts, 3, 1)
    assert A == [[1, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert grid_paths(A) == 2 == count_at_least_brute(counts, 3, 1)
    strict = js.matrix_a(counts, 3, 1, strict=True)
    assert strict[2] == [1, 0, 0] and grid_paths(strict) == 1
    Mh = js.matrix_hat(counts, 3)
    assert Mh == [[0, 3, 5], [0, 2, 3], [0, 1, 5], [1, 1, 1]]
    M = jsp.paper_matrix(counts, 3)
    assert M == [[0, 3, 5, None, None], [None, 0, 2, 3, None], [None, None, 0, 1, 5]]
    # left-aligning the printed M gives M̂ (distinct counts)
    assert [[x for x in row if x is not None] for row in M] == Mh[:3]
    # with ties the printed rule keeps extra zeros left of the diagonal
    assert jsp.paper_matrix([2, 2, 2], 2) == [[0, 0, None], [0, 0, 0]]
    # Lemma 6 on every threshold of a small instance: grid paths through A == brute force
    for counts in [(3, 1, 4, 1, 5), (2, 2, 0, 2, 1, 1)]:
        for k in range(1, len(counts) + 1):
            tally = brute_tally(counts, k)
            for M in range(-1, 6):
                assert grid_paths(js.matrix_a(counts, k, M)) == brute_at_least(tally, M)


# ======================================================================================
# Levels, probabilities, outputs
# ======================================================================================
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_levels_exhaustive(d):
    for counts in all_vectors(d):
        for k in range(1, d + 1):
            m = JointSet(counts, k, base=Fraction(1, 2))
            levels = m.levels()
            assert [(lv.utility, lv.multiplicity) for lv in levels] == brute_levels(counts, k), (counts, k)
            assert all(isinstance(lv, Level) and type(lv.utility) is int and type(lv.multiplicity) is int for lv in levels)
            assert levels[0].utility == 0
            assert m.support_size() == math.comb(d, k)


def test_levels_d6_sorted_vectors():
    """d = 6: every sorted vector of {0..3}^6 (levels depend only on the multiset), every k."""
    for counts in itertools.combinations_with_replacement(SMALL, 6):
        counts = counts[::-1]
        for k in range(1, 7):
            got = [(lv.utility, lv.multiplicity) for lv in JointSet(counts, k).levels()]
            assert got == brute_levels(counts, k)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_outputs_bijection_exhaustive(d):
    """outputs() (the unranking) lists every k-subset exactly once, each at its level."""
    for counts in all_vectors(d):
        for k in range(1, d + 1):
            m = JointSet(counts, k)
            outs = list(m.outputs())
            assert all(type(o) is frozenset for o in outs)
            assert sorted(map(sorted, outs)) == [list(s) for s in itertools.combinations(range(d), k)]
            pos = 0
            for lv in m.levels():
                for o in outs[pos : pos + lv.multiplicity]:
                    assert -maxdiff(counts, o) == lv.utility == m.utility(o)
                pos += lv.multiplicity


@pytest.mark.parametrize("counts,k", [
    ((9, 7, 7, 5, 5, 5, 3, 2, 2, 0, 0, 1), 4),
    (tuple(random.Random(3).sample(range(40), 13)), 5),
    ((4,) * 6 + (1,) * 6, 6),
    (tuple(range(12)), 1),
])
def test_unranking_bijection_medium(counts, k):
    m = JointSet(counts, k)
    for a, lv in enumerate(m.levels()):
        got = [m._unrank(a, r) for r in range(lv.multiplicity)]
        assert len(set(got)) == lv.multiplicity
        assert all(-maxdiff(counts, o) == lv.utility and len(o) == k for o in got)
    assert sum(lv.multiplicity for lv in m.levels()) == math.comb(len(counts), k)


@pytest.mark.parametrize("base", [Fraction(1, 2), Fraction(2, 3)])
def test_probability_exact_rational_base_exhaustive(base):
    for d in range(1, 5):
        for counts in all_vectors(d):
            for k in range(1, d + 1):
                m = JointSet(counts, k, base=base)
                want = brute_probabilities(counts, k, base)
                for o, p in want.items():
                    got = m.probability_exact(o)
                    assert isinstance(got, sympy.Rational)
                    assert Fraction(int(got.p), int(got.q)) == p, (counts, k, o)


@pytest.mark.parametrize("counts,k,epsilon,sensitivity", [
    ((10, 5, 1, 1), 2, Fraction(1), Fraction(1)),
    ((3, 3, 2, 0, 0, 1), 3, Fraction(1, 10), Fraction(1)),
    ((7, 1, 4, 4, 2), 2, Fraction(3), Fraction(2)),
    ((0, 0, 0), 2, Fraction(1, 3), Fraction(1)),
    ((100, 60, 59, 3, 2, 1, 0), 3, Fraction(5, 2), Fraction(1)),
])
def test_probabilities_certified_epsilon(counts, k, epsilon, sensitivity):
    dps = 40
    m = JointSet(counts, k, epsilon=epsilon, sensitivity=sensitivity)
    # 100 guard digits: log(p) for p near 1 cancels ~30 digits in the reference
    want = mp_probabilities(counts, k, epsilon, dps + 100, sensitivity)
    for o, p in want.items():
        got = m.probability(o, dps=dps)
        with mpmath.workdps(dps + 100):
            assert abs(got - p) <= mpmath.mpf(10) ** -dps * p
            assert abs(m.log_probability(o, dps=dps) - mpmath.log(p)) <= mpmath.mpf(10) ** -dps * abs(mpmath.log(p))
        exact = m.probability_exact(o)
        with mpmath.workdps(dps + 20):
            assert abs(mpmath.mpf(sympy.N(exact, dps + 15)) - p) <= mpmath.mpf(10) ** -(dps - 2) * p
    dist = m.distribution(dps=dps)
    assert len(dist) == math.comb(len(counts), k)
    with mpmath.workdps(dps):
        assert abs(mpmath.fsum(p for _, p in dist) - 1) < mpmath.mpf(10) ** -(dps - 3)


def test_paper_worked_example():
    """counts (10, 5, 1, 1), k = 2 (docs/joint_set.md)."""
    m = JointSet([10, 5, 1, 1], 2, epsilon=1)
    assert m.levels() == (Level(0, 1), Level(-4, 2), Level(-5, 2), Level(-9, 1))
    x = sympy.exp(sympy.Rational(-1, 2))
    z = 1 + 2 * x**4 + 2 * x**5 + x**9
    assert sympy.simplify(m.probability_exact({0, 1}) - 1 / z) == 0
    assert sympy.simplify(m.probability_exact({1, 3}) - x**5 / z) == 0
    half = JointSet([10, 5, 1, 1], 2, base=Fraction(1, 2))
    assert half.probability_exact({0, 1}) == sympy.Rational(512, 609)


def test_single_output_and_degenerate():
    m = JointSet([5, 2, 9], 3, epsilon=1)
    assert m.levels() == (Level(0, 1),)
    assert m.probability({0, 1, 2}) == 1
    assert m.sample(rng=1) == frozenset({0, 1, 2})
    m = JointSet([-10**30, 10**30, 0], 1, base="1/3")
    assert [lv.utility for lv in m.levels()] == [0, -(10**30), -(2 * 10**30)]
    assert m.utility([0]) == -(2 * 10**30)


def test_tie_invariance_permutation_equivariance():
    """Relabelling the items relabels the outputs: P_pi(counts)(pi(S)) = P_counts(S)."""
    rng = random.Random(11)
    cases = [(2, 2, 1, 1, 0), (3, 0, 3, 0, 3, 1), (1, 1, 1, 1), (4, 2, 2, 2, 0, 0, 1)]
    for counts in cases:
        d = len(counts)
        for k in range(1, d + 1):
            m = JointSet(counts, k, base=Fraction(1, 3))
            for _ in range(3):
                perm = list(range(d))
                rng.shuffle(perm)  # item i is renamed perm[i]
                permuted = [0] * d
                for i in range(d):
                    permuted[perm[i]] = counts[i]
                mp = JointSet(permuted, k, base=Fraction(1, 3))
                assert mp.levels() == m.levels()
                for o in m.outputs():
                    image = frozenset(perm[i] for i in o)
                    assert mp.probability_exact(image) == m.probability_exact(o)
                    assert mp.utility(image) == m.utility(o)


def test_input_types_accepted():
    import numpy as np
    import gmpy2

    base = JointSet([3, 1, 2], 2, epsilon="0.5")
    for counts in (np.array([3, 1, 2]), [gmpy2.mpz(3), 1, 2.0], (3, 1, 2)):
        m = JointSet(counts, np.int64(2), epsilon=Fraction(1, 2))
        assert m.levels() == base.levels()
    assert base.epsilon == Fraction(1, 2) and base.base is None
    assert JointSet([3, 1, 2], 2, base=0.5).base == Fraction(1, 2)
    assert base.utility([2, 0]) == base.utility({0, 2}) == base.utility(iter((0, 2))) == 0
    assert "JointSet([3, 1, 2], k=2, epsilon=1/2)" == repr(base)
    assert "sensitivity=2" in repr(JointSet([3, 1, 2], 2, sensitivity=2))


def test_bad_inputs_raise_exactdp_errors():
    with pytest.raises(errors.InvalidParameterError):
        JointSet([1, 2], 3)
    with pytest.raises(errors.InvalidParameterError):
        JointSet([1, 2], 0)
    with pytest.raises(errors.InvalidCountsError):
        JointSet([], 1)
    with pytest.raises(errors.InvalidCountsError):
        JointSet([1, float("nan")], 1)
    with pytest.raises(errors.InvalidCountsError):
        JointSet([1, 2.5], 1)
    with pytest.raises(errors.ArgumentTypeError):
        JointSet([True, 2], 1)
    with pytest.raises(errors.ArgumentTypeError):
        JointSet([1, 2], "1")
    with pytest.raises(errors.InvalidParameterError):
        JointSet([1, 2], 1, epsilon=0)
    with pytest.raises(errors.InvalidParameterError):
        JointSet([1, 2], 1, epsilon=float("inf"))
    with pytest.raises(errors.InvalidParameterError):
        JointSet([1, 2], 1, base=1)
    with pytest.raises(errors.InvalidParameterError):
        JointSet([1, 2], 1, epsilon=1, base="1/2")
    with pytest.raises(errors.InvalidParameterError):
        JointSet([1, 2], 1, sensitivity=-1)
    m = JointSet([3, 2, 1, 0], 2)
    with pytest.raises(errors.InvalidOutputError):
        m.probability({0})
    with pytest.raises(errors.InvalidOutputError):
        m.probability([0, 0])
    with pytest.raises(errors.InvalidOutputError):
        m.utility([0, 4])
    with pytest.raises(errors.ArgumentTypeError):
        m.utility("01")
    with pytest.raises(errors.TooManyOutputsError):
        list(JointSet(range(30), 10).outputs(max_outputs=1000))
    with pytest.raises(errors.InvalidParameterError):
        count_at_least_dp([1, 2], 1, 0.5)
    with pytest.raises(errors.ArgumentTypeError):
        count_at_least_matrix_paths([1, 2], 1, "1")
    with pytest.raises(errors.InvalidParameterError):
        count_at_least([1, 2], 1, 0, method="fft")
    with pytest.raises(errors.InvalidParameterError, match="method"):
        count_exactly([1, 2], 1, 0, method="fft")
    with pytest.raises(errors.InvalidParameterError, match=r"M=0\.5"):
        count_exactly([1, 2], 1, 0.5, method="brute")
    with pytest.raises(errors.InvalidParameterError):
        count_at_least_brute([1, 2], 3, 0)
    with pytest.raises(errors.TooManyOutputsError):
        count_at_least_brute(range(40), 20, 0)
    with pytest.raises(errors.InvalidParameterError):
        jsp.paper_algorithm1_terms([1, 2], 1, strict=False, line4="other")
    with pytest.raises(errors.InvalidParameterError):
        jsp.reading_terms([1, 2], 1, "lenient")
    with pytest.raises(errors.InvalidParameterError):
        paper_algorithm1_distribution([1, 2], 1, 0, strict=False)
    assert issubclass(errors.InvalidParameterError, ValueError)


# ======================================================================================
# Sampling
# ======================================================================================
ALPHA = Fraction(1, 10**6)  # false-alarm probability of each chi-square test


@pytest.mark.parametrize("counts,k,kw,n", [
    ((3, 2, 2, 1, 0, 0), 3, {"base": Fraction(2, 3)}, 20000),
    ((4, 4, 1, 0, 2), 2, {"epsilon": Fraction(1, 2)}, 20000),
])
def test_sampler_goodness_of_fit(counts, k, kw, n):
    """Pearson's chi-square over every output (small bins pooled).  Under the null
    hypothesis the statistic is asymptotically chi-square(df); we reject only beyond its
    1 - 1e-6 quantile (mpmath regularized incomplete gamma), so with the fixed seed the
    false-alarm probability of this test is at most about 1e-6."""
    m = JointSet(counts, k, **kw)
    expected = dict(m.distribution(dps=20))
    draws = Counter(m.samples(n, rng=20260))
    stat, df = chi2_statistic(draws, expected, n)
    assert df >= 3
    assert stat < chi2_threshold(df, ALPHA), (stat, df)


def test_sampler_deep_levels_uniform():
    """Uniformity within a level: a base near 1 makes the deep levels likely; every set
    of a level is drawn, and the per-level counts pass a chi-square test (alpha 1e-6)."""
    counts, k = (5, 3, 3, 2, 1, 1, 0), 3
    m = JointSet(counts, k, base=Fraction(9, 10))
    n = 30000
    draws = Counter(m.samples(n, rng=7))
    expected = dict(m.distribution(dps=20))
    assert set(draws) == set(expected)
    stat, df = chi2_statistic(draws, expected, n)
    assert stat < chi2_threshold(df, ALPHA)


def test_sampler_reproducible_and_exact_types():
    m = JointSet(list(range(20)), 5, epsilon=Fraction(1, 5))
    a = m.samples(50, rng=123)
    b = m.samples(50, rng=random.Random(123))
    assert a == b
    gen = random.Random(123)
    fresh = JointSet(list(range(20)), 5, epsilon=Fraction(1, 5))
    assert [fresh.sample(rng=gen) for _ in range(50)] == a  # same stream, fresh instance
    assert m.samples(50, rng=124) != a
    assert all(type(o) is frozenset and len(o) == 5 for o in a)
    assert m.sample(rng=5) == m.sample(rng=5)
    assert isinstance(m.sample(), frozenset)  # OS randomness


def test_sampler_large_instance_runs():
    counts = random.Random(2026).sample(range(10_000), 1_000)
    m = JointSet(counts, 10, epsilon=Fraction(1, 100))
    for o in m.samples(20, rng=3):
        a = m.table.index_of(m.utility(o))
        assert len(o) == 10 and 0 <= a < len(m.levels())


# ======================================================================================
# The paper's Algorithm 1 as printed
# ======================================================================================
def printed_entries(counts, k) -> Counter:
    """Line 1 as printed (1-based i, j over the sorted counts): value -> number of entries."""
    c = sorted(counts, reverse=True)
    d = len(c)
    return Counter(c[i - 1] - c[j - 1] for i in range(1, k + 1) for j in range(1, d + 1)
                   if c[i - 1] - c[j - 1] >= 0 and d - j >= k - i)


def printed_nonstrict_reference(counts, k, base: Fraction) -> dict:
    """Non-strict reading from the definitions: value V has weight e(V) * m(V) * base**V,
    shared uniformly by the m(V) sets of utility -V."""
    e = printed_entries(counts, k)
    tally = brute_tally(counts, k)
    subsets = [frozenset(s) for s in itertools.combinations(range(len(counts)), k)]
    w = {s: e[maxdiff(counts, s)] * Fraction(base) ** maxdiff(counts, s) for s in subsets}
    assert all(tally[maxdiff(counts, s)] for s in subsets)
    z = sum(w.values())
    return {s: x / z for s, x in w.items() if x}


def printed_strict_reference(counts, k, base: Fraction, line4: str) -> dict:
    """Strict reading: U(V_t) = #{maxdiff < V_t} - #{maxdiff < V_{t-1}}."""
    e = printed_entries(counts, k)
    tally = brute_tally(counts, k)
    values = sorted(e)
    subsets = [frozenset(s) for s in itertools.combinations(range(len(counts)), k)]
    out: dict = Counter()
    for t, V in enumerate(values):
        lo = values[t - 1] if t else -math.inf
        U = sum(m for D, m in tally.items() if lo <= D < V)
        weight = e[V] * U * Fraction(base) ** V
        if not weight:
            continue
        if line4 == "utility":
            chosen = [s for s in subsets if maxdiff(counts, s) == V]
        else:
            chosen = [s for s in subsets if lo <= maxdiff(counts, s) < V]
        if not chosen:
            out[None] += weight
        for s in chosen:
            out[s] += weight / len(chosen)
    z = sum(out.values())
    if not z:  # every weight of line 3 is 0: the printed algorithm outputs nothing
        return {None: 1}
    return {s: x / z for s, x in out.items() if x}


def test_paper_algorithm1_against_reference_exhaustive():
    base = Fraction(1, 2)
    for d in range(1, 5):
        for counts in all_vectors(d):
            for k in range(1, d + 1):
                got = paper_algorithm1_distribution(counts, k, base=base, strict=False)
                assert got == printed_nonstrict_reference(counts, k, base), (counts, k)
                for line4 in ("utility", "paths"):
                    got = paper_algorithm1_distribution(counts, k, base=base, strict=True, line4=line4)
                    assert got == printed_strict_reference(counts, k, base, line4), (counts, k, line4)
                    assert sum(got.values()) == 1


def test_paper_algorithm1_value_forms_agree():
    counts, k = (10, 5, 1, 1), 2
    for strict in (False, True):
        exact = paper_algorithm1_distribution(counts, k, 1, strict=strict, exact=True)
        numeric = paper_algorithm1_distribution(counts, k, 1, strict=strict, dps=40)
        assert list(exact) == list(numeric)
        for o in exact:
            with mpmath.workdps(50):
                assert abs(mpmath.mpf(sympy.N(exact[o], 50)) - numeric[o]) <= mpmath.mpf(10) ** -40 * numeric[o]


def test_paper_algorithm1_worked_example_values():
    """docs/joint_set.md: counts (10, 5, 1, 1), k = 2, base 1/2 (= exp(-eps/2))."""
    F = Fraction
    s = lambda *ids: frozenset(ids)
    assert paper_algorithm1_distribution([10, 5, 1, 1], 2, base="1/2", strict=False) == {
        s(0, 1): F(1024, 1185), s(0, 2): F(64, 1185), s(0, 3): F(64, 1185),
        s(1, 2): F(16, 1185), s(1, 3): F(16, 1185), s(2, 3): F(1, 1185)}
    assert paper_algorithm1_distribution([10, 5, 1, 1], 2, base="1/2", strict=True) == {
        s(0, 2): F(16, 49), s(0, 3): F(16, 49), s(1, 2): F(8, 49), s(1, 3): F(8, 49), s(2, 3): F(1, 49)}
    em = JointSet([10, 5, 1, 1], 2, base="1/2")
    assert {o: em.probability_exact(o) for o in em.outputs()}[s(0, 1)] == F(512, 609)


def test_paper_algorithm1_k1_distinct_is_em_and_smallest_counterexamples():
    """k = 1 with distinct counts: one entry per item, so the non-strict reading is the
    EM.  Smallest differences (docs/joint_set.md)."""
    for counts in itertools.permutations(range(5)):
        assert total_variation(counts, 1, 1, reading="nonstrict") == 0
    assert total_variation((2, 1, 0), 2, 1, reading="nonstrict") == 0
    assert total_variation((0, 0, 1), 1, 1, reading="nonstrict") > 0
    assert total_variation((0, 1, 3), 2, 1, reading="nonstrict") > 0
    # no vector of {0..3}^d with d <= 2, nor distinct one with d = 3 and max < 3, differs
    for d in (1, 2):
        for counts in all_vectors(d):
            for k in range(1, d + 1):
                assert total_variation(counts, k, 1, reading="nonstrict") == 0
    # strict: on (0, 1), k = 1 the printed algorithm always outputs the worse item
    assert paper_algorithm1_distribution((0, 1), 1, base="1/2", strict=True) == {frozenset({0}): 1}
    # strict, line 4 as printed: on (0, 2, 3), k = 2 no set has the sampled utility
    assert paper_algorithm1_distribution((0, 2, 3), 2, base="1/2", strict=True) == {None: 1}


def test_privacy_loss_em_within_epsilon_and_printed_violation():
    # the EM is eps-DP: exhaustive small check
    for d in (2, 3):
        for counts in all_vectors(d):
            for k in range(1, d + 1):
                assert privacy_loss(counts, k, 1, reading="em", dps=10).loss <= 1
    # the non-strict printed algorithm is not: (0,1,2,3) -> (0,1,2,4), k = 3, distinct counts.
    # Independent closed form: P(S|D) = x/(1+3x), P(S|D') = x^2/(3+4x+x^2), x = e^(-1/2).
    r = privacy_loss((0, 1, 2, 3), 3, 1, reading="nonstrict", neighbours=[(0, 1, 2, 4)], dps=30)
    with mpmath.workdps(40):
        x = mpmath.exp(-mpmath.mpf(1) / 2)
        want = mpmath.log((x / (1 + 3 * x)) / (x**2 / (3 + 4 * x + x**2)))
        assert abs(r.loss - want) < mpmath.mpf(10) ** -29
    assert r.loss > 1 and r.output == frozenset({0, 1, 2})
    # the strict readings put probability 0 on some sets: infinite loss
    assert privacy_loss((0, 0), 1, 1, reading="strict").loss == mpmath.inf
    assert privacy_loss((0, 0), 1, 1, reading="strict-paths").loss == mpmath.inf
    # identical distributions give exactly 0 (adding one user to every item)
    assert privacy_loss((3, 1, 0), 2, 1, neighbours=[(4, 2, 1)]).loss == 0


def test_exported():
    assert exactdp.JointSet is JointSet
    assert "JointSet" in exactdp.__all__
