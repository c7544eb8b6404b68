"""Tests of exactdp.JointSet and exactdp.mechanisms.joint_set (docs/definitions.md §1, §2.3 and §3).

Reference values (tests/twins/joint_set.py) are computed from the definitions
(docs/definitions.md §2.3, the workshop paper's Lemma 5), never by calling the code under
test: every k-subset is enumerated, its counts sorted descending and compared with the top-k
counts.  The paper's Algorithm 1 as printed is tested in test_joint_set_paper.py.
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
from exactdp.mechanisms.joint_set import mechanism as js
from exactdp.mechanisms.joint_set import paper as jsp
from exactdp.mechanisms.joint_set.mechanism import (
    JointSet,
    count_at_least,
    count_at_least_brute,
    count_at_least_dp,
    count_at_least_matrix_paths,
    count_exactly,
    levels_dp,
    levels_matrix_paths,
)
from exactdp.mechanisms.joint_set.paper import paper_algorithm1_distribution
from exactdp.core.levels import Level

from twins import (
    chi2_statistic,
    chi2_threshold,
    grid_paths,
    set_at_least,
    set_brute_levels,
    set_brute_probabilities,
    set_maxdiff,
    set_mp_probabilities,
    set_tally,
    small_vectors,
)


# ======================================================================================
# The three counting methods, exhaustively: {0,1,2,3}^d, d <= 6, every k, every M
# ======================================================================================
@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6])
def test_counting_methods_agree_exhaustive(d):
    """Every vector of {0..3}^d, every k, every M in -1..4 (beyond 3 every subset counts):
    matrix paths == DP == brute force == reference tally, at least and exactly."""
    for counts in small_vectors(d):
        for k in range(1, d + 1):
            tally = set_tally(counts, k)
            previous = 0
            for M in range(-1, 5):
                want = set_at_least(tally, M)
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
            tally = set_tally(counts, k)
            for M in range(-1, 7):
                want = tally.get(M, 0)
                for method in js.METHODS:
                    assert count_exactly(counts, k, M, method) == want
                    assert count_at_least(counts, k, M, method) == set_at_least(tally, M)
                assert JointSet(counts, k).count_exactly(M, "dp") == want


@pytest.mark.slow
def test_strict_matrix_paths_counts_strictly_greater():
    """With the strict reading of A, the paths count the sets with utility > -M."""
    for d in range(1, 6):
        for counts in small_vectors(d):
            for k in range(1, d + 1):
                tally = set_tally(counts, k)
                for M in range(0, 5):
                    assert count_at_least_matrix_paths(counts, k, M, strict=True) == set_at_least(tally, M - 1)


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
    tally = set_tally(counts, k)
    assert count_at_least_matrix_paths(counts, k, M) == set_at_least(tally, M)
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
    # so an entry count e(V) can pass k(d-k+1): with every count tied, row i (1-based) keeps
    # d-k+i entries, k(d-k) + k(k+1)/2 in all (docs/joint_set.md states this bound)
    for d in range(1, 7):
        for k in range(1, d + 1):
            entries = sum(v is not None for row in jsp.paper_matrix([0] * d, k) for v in row)
            assert entries == k * (d - k) + k * (k + 1) // 2
            assert k * (d - k + 1) <= entries
    assert sum(v is not None for row in jsp.paper_matrix([0] * 4, 3) for v in row) == 9 > 3 * (4 - 3 + 1)
    # Lemma 6 on every threshold of a small instance: grid paths through A == brute force
    for counts in [(3, 1, 4, 1, 5), (2, 2, 0, 2, 1, 1)]:
        for k in range(1, len(counts) + 1):
            tally = set_tally(counts, k)
            for M in range(-1, 6):
                assert grid_paths(js.matrix_a(counts, k, M)) == set_at_least(tally, M)


# ======================================================================================
# Levels, probabilities, outputs
# ======================================================================================
@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_levels_exhaustive(d):
    for counts in small_vectors(d):
        for k in range(1, d + 1):
            m = JointSet(counts, k, base=Fraction(1, 2))
            levels = m.levels()
            assert [(lv.utility, lv.multiplicity) for lv in levels] == set_brute_levels(counts, k), (counts, k)
            assert all(isinstance(lv, Level) and type(lv.utility) is int and type(lv.multiplicity) is int for lv in levels)
            assert levels[0].utility == 0
            assert m.support_size() == math.comb(d, k)


def test_levels_d6_sorted_vectors():
    """d = 6: every sorted vector of {0..3}^6 (levels depend only on the multiset), every k."""
    for counts in itertools.combinations_with_replacement(range(4), 6):
        counts = counts[::-1]
        for k in range(1, 7):
            got = [(lv.utility, lv.multiplicity) for lv in JointSet(counts, k).levels()]
            assert got == set_brute_levels(counts, k)


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_outputs_bijection_exhaustive(d):
    """outputs() (the unranking) lists every k-subset exactly once, each at its level."""
    for counts in small_vectors(d):
        for k in range(1, d + 1):
            m = JointSet(counts, k)
            outs = list(m.outputs())
            assert all(type(o) is frozenset for o in outs)
            assert sorted(map(sorted, outs)) == [list(s) for s in itertools.combinations(range(d), k)]
            pos = 0
            for lv in m.levels():
                for o in outs[pos : pos + lv.multiplicity]:
                    assert -set_maxdiff(counts, o) == lv.utility == m.utility(o)
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
        assert all(-set_maxdiff(counts, o) == lv.utility and len(o) == k for o in got)
    assert sum(lv.multiplicity for lv in m.levels()) == math.comb(len(counts), k)


@pytest.mark.parametrize("base", [Fraction(1, 2), Fraction(2, 3)])
def test_probability_exact_rational_base_exhaustive(base):
    for d in range(1, 5):
        for counts in small_vectors(d):
            for k in range(1, d + 1):
                m = JointSet(counts, k, base=base)
                want = set_brute_probabilities(counts, k, base)
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
    want = set_mp_probabilities(counts, k, epsilon, dps + 100, sensitivity)
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
ALPHA = 1e-6  # false-alarm probability of each chi-square test


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
    stat, df = chi2_statistic(draws, {o: float(p) * n for o, p in expected.items()})
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
    stat, df = chi2_statistic(draws, {o: float(p) * n for o, p in expected.items()})
    assert stat < chi2_threshold(df, ALPHA)


def test_sampler_reproducible_and_exact_types():
    m = JointSet(list(range(20)), 5, epsilon=Fraction(1, 5))
    a = m.samples(50, rng=123)
    b = m.samples(50, rng=random.Random(123))
    assert a == b
    fresh = JointSet(list(range(20)), 5, epsilon=Fraction(1, 5))
    assert fresh.samples(50, rng=123) == a  # a fresh instance (no level table kept) draws the same
    gen, again = random.Random(123), random.Random(123)
    one_by_one = [m.sample(rng=gen) for _ in range(50)]  # sample() reads the stream its own way
    assert [fresh.sample(rng=again) for _ in range(50)] == one_by_one
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


def test_exported():
    assert exactdp.JointSet is JointSet
    assert "JointSet" in exactdp.__all__


@pytest.mark.parametrize("d", [6, 7, 9])
def test_level_paths_near_k_equal_d_count_every_level(d):
    """k close to d (short segments between the boundaries, the sums cut at the segment
    length): every level's path count is its multiplicity, and unranking is a bijection
    onto the sets of that level (plain enumeration)."""
    for counts in ([5, 5, 3, 1, 1, 0, 4, 4, 2][:d], list(range(d)), [0] * d):
        for k in (d - 2, d - 1, d):
            m = JointSet(counts, k, epsilon=1)
            by_level = {}
            for s in itertools.combinations(range(d), k):
                by_level.setdefault(m.utility(s), set()).add(frozenset(s))
            for a, lv in enumerate(m.levels()):
                assert {m._unrank(a, r) for r in range(lv.multiplicity)} == by_level[lv.utility]
